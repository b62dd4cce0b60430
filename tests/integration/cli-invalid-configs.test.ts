// The CLI itself on a seeded sample of the invalid configs the library-path
// property test (tests/unit/config-invalid.test.ts) checks by the hundred:
// `rollflow validate` and `rollflow run` exit 2 with the broken key's path on
// stderr and no stack trace. Nothing starts: every config fails before.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { configWith, invalidConfig, type Break } from '../helpers/invalid-configs';
import { ROOT } from './helpers/dev-server';

const cli = path.join(ROOT, 'dist/cli/index.js');
const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-invalid-cli-'));
const sample = fc.sample(invalidConfig, { seed: 20260414, numRuns: 12 });

beforeAll(() => {
  expect(existsSync(cli), 'run `make build` first').toBe(true);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function rollflow(command: string, b: Break, i: number) {
  const raw = configWith(b);
  const file = path.join(dir, `${command}-${i}.yaml`);
  writeFileSync(file, stringify(raw));
  // A state dir of its own: were a config to pass, `run` would bring up nothing of anyone else's.
  const r = spawnSync(process.execPath, [cli, command, file], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ROLLFLOW_STATE: path.join(dir, 'state') } });
  return { status: r.status, stderr: r.stderr, file };
}

function expectRejected(r: { status: number | null; stderr: string; file: string }, b: Break): void {
  expect(r.status, `${b.what}: ${r.stderr}`).toBe(2);
  expect(r.stderr.split('\n')[0]).toBe(`rollflow: invalid config ${r.file}:`);
  expect(r.stderr, b.what).toMatch(new RegExp(`^ {2}${b.path.replace(/[.[\]]/g, '\\$&')}[.[:]`, 'm'));
  expect(r.stderr).not.toMatch(/^\s+at /m);
}

describe('the CLI on invalid configs', () => {
  it.each(sample.map((b, i) => [b.what, b, i] as const))('validate: %s', (_what, b, i) => {
    expectRejected(rollflow('validate', b, i), b);
  });

  it.each(sample.slice(0, 4).map((b, i) => [b.what, b, i] as const))('run: %s', (_what, b, i) => {
    expectRejected(rollflow('run', b, i), b);
  });

  it('validate: what only python-engines\' own models know, each at its config path', () => {
    const example = path.join(ROOT, 'examples/learn-lake.yaml');
    const sets = ['custom_envs.lake.env_config.map_size=99', 'engines.inference[0].options.max_bach=2', 'custom_envs.math.env_type=arithmetc'];
    const r = spawnSync(process.execPath, [cli, 'validate', example, ...sets.flatMap((s) => ['--set', s])], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      `rollflow: invalid config ${example}:`,
      expect.stringMatching(/^ {2}engines\.inference\[0\]\.options\.max_bach: got 2; unknown key; did you mean "max_batch"\?/),
      '  custom_envs.lake.env_config.map_size: got 99; Input should be less than or equal to 16',
      '  custom_envs.math.env_type: got "arithmetc"; a registered env: one of arithmetic, dataset, frozen_lake, latency_sim, swe, swe_lite; did you mean "arithmetic"?',
    ]);
  });
});
