/**
 * rollflow as a user installs it: `npm pack` of this checkout (its built
 * dist/), installed into an empty directory with npm, then used from a
 * script there, `import { RollflowClient } from 'rollflow'`, against a live
 * stack: validate a config, start a run, wait for it, list it, and read a
 * failure's cause. A TypeScript file type-checks against the package's own
 * declarations. The stack (Temporal dev server, sim engines, a worker) is the
 * repository's; the script touches only the installed package.
 *
 * npm install reads the registry, or its cache (--prefer-offline): the
 * machines that run `make test` reach the registries.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pythonBin } from '../../src/paths';
import { ROOT } from './helpers/dev-server';
import { upSimStack, type SimStack } from './helpers/sim-stack';

let stack: SimStack;
let app: string;

beforeAll(async () => {
  stack = await upSimStack(
    'package-test',
    `
exp_name: pkg
max_steps: 2
rollout_batch_size: 2
num_return_sequences_in_group: 2
custom_envs:
  arith: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 8 }
`,
  );
  app = mkdtempSync(path.join(tmpdir(), 'rollflow-user-'));
  execFileSync('npm', ['pack', '--pack-destination', app, '--silent'], { cwd: ROOT, encoding: 'utf8' });
  const tarball = readdirSync(app).find((f) => f.endsWith('.tgz'))!;
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'user-ci', version: '1.0.0', private: true, type: 'module' }));
  execFileSync('npm', ['install', `./${tarball}`, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: app, encoding: 'utf8', timeout: 600_000 });
});

afterAll(async () => {
  await stack?.down();
});

/** Runs `code` as an ES module in the user's directory; python-engines' checks use this checkout's venv (ROLLFLOW_PYTHON). */
function node(code: string) {
  const file = path.join(app, `script-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, code);
  return spawnSync(process.execPath, [file, stack.config], { cwd: app, encoding: 'utf8', env: { ...process.env, ROLLFLOW_PYTHON: pythonBin(), ROLLFLOW_STATE: stack.server.stateDir }, timeout: 300_000 });
}

describe('the packed package, installed and imported', () => {
  it('starts a run from a config with overrides, waits for it and lists it', () => {
    const r = node(`
import { RollflowClient } from 'rollflow';
const config = process.argv[2];
const rf = await RollflowClient.connect({ config });
const { runId, url } = await rf.start(config, { set: ['max_steps=2'], runId: 'from-package' });
const final = await rf.wait(runId);
const listed = await rf.list();
console.log(JSON.stringify({ runId, url, step: final.step, reward: final.totals.lastRewardMean, listed: listed.map((l) => [l.runId, l.status, l.step, l.reward]) }));
await rf.close();
`);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { runId: string; url: string; step: number; reward: number; listed: [string, string, number, number][] };
    expect(out).toMatchObject({ runId: 'from-package', step: 2 });
    expect(out.url).toContain('/workflows/from-package');
    expect(out.listed).toContainEqual(['from-package', 'COMPLETED', 2, out.reward]); // step and reward from the run's search attributes and memo
  });

  it('validates as the CLI does: a bad key is a ConfigError naming it, before anything starts', () => {
    const r = node(`
import { RollflowClient, ConfigError } from 'rollflow';
const config = process.argv[2];
const rf = await RollflowClient.connect({ config });
try {
  await rf.start(config, { set: ['async_generation_ratio=-1'], runId: 'never' });
  console.log('started');
} catch (e) {
  console.log(JSON.stringify({ configError: e instanceof ConfigError, message: e.message }));
}
await rf.close();
`);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim()) as { configError: boolean; message: string };
    expect(out.configError).toBe(true);
    expect(out.message).toContain('async_generation_ratio');
  });

  it('type-checks a TypeScript user of the package against its declarations', () => {
    writeFileSync(
      path.join(app, 'use.ts'),
      `import { RollflowClient, RunFailedError, type RunStatus } from 'rollflow';
export async function ci(config: string): Promise<number> {
  const rf = await RollflowClient.connect({ config });
  try {
    const final: RunStatus = await rf.wait((await rf.start(config)).runId);
    return final.step;
  } catch (e) {
    if (e instanceof RunFailedError) return -1;
    throw e;
  } finally {
    await rf.close();
  }
}
`,
    );
    const tsc = path.join(ROOT, 'node_modules/.bin/tsc');
    const r = spawnSync(tsc, ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--skipLibCheck', '--types', 'node', '--typeRoots', path.join(ROOT, 'node_modules/@types'), 'use.ts'], { cwd: app, encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    // And a wrong use is caught: the declarations are real, not `any`.
    writeFileSync(path.join(app, 'wrong.ts'), `import { RollflowClient } from 'rollflow';\nconst n: number = RollflowClient.connect();\n`);
    const wrong = spawnSync(tsc, ['--noEmit', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--skipLibCheck', '--types', 'node', '--typeRoots', path.join(ROOT, 'node_modules/@types'), 'wrong.ts'], { cwd: app, encoding: 'utf8' });
    expect(wrong.status).not.toBe(0);
    expect(wrong.stdout).toContain("Type 'Promise<RollflowClient>' is not assignable to type 'number'");
  });
});
