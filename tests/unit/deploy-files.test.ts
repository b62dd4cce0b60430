// docker-compose.yml and temporal/dynamic-config.yaml, checked without a
// container engine: Debian's docker-compose validates the file offline, and
// the dev server's reading of the dynamic config must equal the YAML itself.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = path.join(__dirname, '../..');

function composeConfig(file: string, ...args: string[]) {
  const r = spawnSync('docker-compose', ['-f', file, 'config', ...args], { cwd: path.dirname(file), encoding: 'utf8' });
  if (r.error) throw new Error(`docker-compose is not installed (make setup installs it): ${r.error.message}`);
  return r;
}

describe('docker-compose.yml', () => {
  it('is a valid compose file with the Temporal cluster, UI, worker and engines', () => {
    const r = composeConfig(path.join(root, 'docker-compose.yml'), '--services');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n').sort()).toEqual(
      ['engine-env', 'engine-inference', 'engine-trainer', 'postgresql', 'temporal', 'temporal-setup', 'temporal-ui', 'worker'].sort(),
    );
  });

  it('is checked for real: a misspelt key is rejected', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-compose-'));
    const broken = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8').replace('    healthcheck:', '    healthchek:');
    writeFileSync(path.join(dir, 'docker-compose.yml'), broken);
    copyFileSync(path.join(root, 'Dockerfile'), path.join(dir, 'Dockerfile'));
    const r = composeConfig(path.join(dir, 'docker-compose.yml'), '-q');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('healthchek');
  });
});

describe('temporal/dynamic-config.yaml', () => {
  it('gives the dev server the same pairs the cluster reads', () => {
    const file = path.join(root, 'temporal/dynamic-config.yaml');
    const asYaml = Object.entries(parse(readFileSync(file, 'utf8')) as Record<string, { value: unknown }[]>).map(
      ([key, [entry]]) => `${key}=${JSON.stringify(entry?.value)}`,
    );
    const script = `source <(sed -n '/^dynamic_config_pairs()/,/^}/p' temporal/dev-server.sh); dynamic_config_pairs temporal/dynamic-config.yaml`;
    const r = spawnSync('bash', ['-c', script], { cwd: root, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual(asYaml);
    expect(asYaml.length).toBeGreaterThan(0);
  });
});
