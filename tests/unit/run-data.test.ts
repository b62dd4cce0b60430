// Where a run keeps its data (its own directory under run_dir, its own store
// prefix), the refusal of a run id that already has data, and --resume-from
// reading checkpoints of both layouts.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readCheckpoint } from '../../src/client/checkpoint';
import { buildPlan } from '../../src/client/plan';
import { checkNewRunId } from '../../src/client/run-id';
import { ConfigError, parseConfig } from '../../src/configs';
import { checkpointDir, runDataDir, storeDirectory } from '../../src/core';

const custom_envs = { c: { env_type: 'arithmetic' } };
const loadedIn = (runDir: string, extra: Record<string, unknown> = {}) => parseConfig({ custom_envs, run_dir: runDir, ...extra }, 'test', '/work');

function refusal(fn: () => void): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('run data layout', () => {
  it('a run writes under <run_dir>/<run id>: two runs of one config never share a directory', () => {
    const loaded = loadedIn('/runs/exp');
    const [a, b] = [buildPlan(loaded, 'exp-1'), buildPlan(loaded, 'exp-2')];
    expect([a.runDir, b.runDir]).toEqual(['/runs/exp/exp-1', '/runs/exp/exp-2']);
    expect(checkpointDir(a.runDir, 4)).toBe('/runs/exp/exp-1/checkpoints/step-000004');
  });

  it('refuses a run id with data in its run directory or in the sample store, and names where', () => {
    const runDir = mkdtempSync(path.join(tmpdir(), 'rollflow-runs-'));
    const loaded = loadedIn(runDir);
    expect(() => checkNewRunId(loaded, 'fresh')).not.toThrow();
    mkdirSync(runDataDir(runDir, 'empty'), { recursive: true }); // a run that failed before writing anything
    expect(() => checkNewRunId(loaded, 'empty')).not.toThrow();

    mkdirSync(runDataDir(runDir, 'ran'), { recursive: true });
    writeFileSync(path.join(runDataDir(runDir, 'ran'), 'metrics.jsonl'), '{"run_id":"ran","step":0}\n');
    expect(refusal(() => checkNewRunId(loaded, 'ran'))).toContain(`--run-id: got "ran"; an id with no data yet: ${runDataDir(runDir, 'ran')} holds an earlier run's data`);

    mkdirSync(path.join(storeDirectory(loaded.derived.sample_store, 'this test'), 'sampled', 'trajectories'), { recursive: true });
    expect(refusal(() => checkNewRunId(loaded, 'sampled'))).toContain(`${path.join(runDir, 'samples', 'sampled')} holds an earlier run's data`);
  });

  it('refuses a run id that is not one safe path segment, or that names the sample store\'s directory', () => {
    const loaded = loadedIn('/nonexistent/runs');
    for (const bad of ['a/b', '..', '.', 'x y', '']) expect(refusal(() => checkNewRunId(loaded, bad))).toContain('letters, digits');
    expect(refusal(() => checkNewRunId(loaded, 'samples'))).toContain("/nonexistent/runs/samples would be the sample store's directory");
    // a store elsewhere leaves the name free
    expect(() => checkNewRunId(loadedIn('/nonexistent/runs', { sample_store: { path: '/nonexistent/store' } }), 'samples')).not.toThrow();
  });

  it('--resume-from reads a checkpoint of the per-run layout and of the older shared layout', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rollflow-ckpt-'));
    const loaded = loadedIn(root);
    const manifest = { step: 2, version: 2, consumed: [[0, [[0, 4]]]], seed: loaded.config.seed, dataset_size: loaded.config.dataset_size, config_hash: loaded.hash, trainer_checkpoint: '/t' };
    const perRun = checkpointDir(runDataDir(root, 'new-run'), 2);
    const shared = checkpointDir(root, 2); // <run_dir>/checkpoints/step-N, written before runs had their own directory
    for (const [dir, runId] of [[perRun, 'new-run'], [shared, 'old-run']] as const) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ ...manifest, run_id: runId }));
      await expect(readCheckpoint(dir, loaded, () => undefined)).resolves.toMatchObject({ run_id: runId, step: 2 });
      expect((await readCheckpoint(path.join(dir, 'manifest.json'), loaded, () => undefined)).run_id).toBe(runId);
    }
  });
});
