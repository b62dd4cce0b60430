/**
 * track_with on a live stack: a run with tensorboard, wandb (offline) and
 * stdout; the event files are read back with tensorboard's own reader and
 * the wandb offline run with wandb's own records (python-engines'
 * tests/trackers/read_back.py), and every record of metrics.jsonl and
 * validation.jsonl is in both. A tracker that cannot write does not fail the run.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pythonBin } from '../../src/paths';
import { METRIC, VAL_METRIC } from '../../src/core';
import { freePort, readJsonl, ROOT } from './helpers/dev-server';
import { scrape } from './helpers/prometheus';
import { upSimStack, type SimStack } from './helpers/sim-stack';

let stack: SimStack;
let metricsUrl: string;

beforeAll(async () => {
  const metricsPort = await freePort();
  metricsUrl = `http://127.0.0.1:${metricsPort}`;
  stack = await upSimStack(
    'trackers',
    `
exp_name: trk
max_steps: 3
eval_steps: 2
rollout_batch_size: 2
num_return_sequences_in_group: 2
custom_envs:
  arith: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 16 }
val_env_manager: { num_env_groups: 2, group_size: 2, tags: [arith] }
track_with: [tensorboard, wandb, stdout]
tracker_kwargs: { project: rollflow-tests }
`,
    {},
    `worker: { metrics_address: "127.0.0.1:${metricsPort}" }`,
  );
});

afterAll(async () => {
  await stack?.down();
});

const runDir = (runId: string) => path.join(stack.server.stateDir, 'run', runId);
const workerLog = () => readFileSync(path.join(stack.server.stateDir, 'logs', 'worker-trackers.log'), 'utf8');

interface ReadBack {
  tensorboard: Record<string, [number, number][]>;
  wandb_runs: string[];
  wandb_history: Record<string, number>[];
  wandb_config: Record<string, unknown>;
}

function readBack(runId: string): ReadBack {
  const r = spawnSync(pythonBin(), ['-m', 'tests.trackers.read_back', path.join(runDir(runId), 'tensorboard'), runDir(runId), runId], { cwd: path.join(ROOT, 'python-engines'), encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as ReadBack;
}

describe('experiment trackers (track_with)', () => {
  it('tensorboard and wandb get every step and validation record and the config; stdout a line per record', async () => {
    const r = stack.rollflow('run', stack.config, '--wait', '--run-id', 'trk');
    expect(r.status, r.stderr).toBe(0);
    const steps = readJsonl(path.join(runDir('trk'), 'metrics.jsonl'));
    const validations = readJsonl(path.join(runDir('trk'), 'validation.jsonl'));
    expect(steps).toHaveLength(3);
    expect(validations.map((v) => v.step)).toEqual([0, 2, 3]);
    // The run ends on what a newcomer looks for: the last validation's reward, the run's files, one trajectory.
    const closing = r.stdout.trim().split('\n').slice(-3);
    expect(closing[0]).toBe(`final validation reward ${(validations[2]![VAL_METRIC.rewardMean] as number).toFixed(3)} (after step 3)`);
    expect(closing[1]).toBe(`run directory: ${runDir('trk')}`);
    expect(closing[2]).toMatch(/^a trajectory in the Temporal UI: http:\/\/.+\/workflows\/trk%2F.+/);

    const back = readBack('trk');
    const rewards = steps.map((s) => [s.step, s[METRIC.rewardMean]]);
    expect(back.tensorboard[METRIC.rewardMean]!.map(([step, v]) => [step, Number(v.toFixed(6))])).toEqual(rewards.map(([s, v]) => [s, Number((v as number).toFixed(6))]));
    expect(back.tensorboard[VAL_METRIC.rewardMean]!.map(([step]) => step)).toEqual([0, 2, 3]);
    // The two files' version series stay apart: the validations' is val/version.
    expect(back.tensorboard.version!.map(([step, v]) => [step, v])).toEqual(steps.map((s) => [s.step, s.version]));
    expect(back.tensorboard['val/version']!.map(([step, v]) => [step, v])).toEqual(validations.map((s) => [s.step, s.version]));

    expect(back.wandb_runs).toHaveLength(1); // one wandb run for the whole run
    const wandbRewards = back.wandb_history.filter((h) => METRIC.rewardMean in h).map((h) => [h._step, h[METRIC.rewardMean]]);
    expect(wandbRewards).toEqual(rewards);
    expect(back.wandb_history.filter((h) => VAL_METRIC.rewardMean in h).map((h) => h._step)).toEqual([0, 2, 3]);
    expect(back.wandb_config).toMatchObject({ exp_name: 'trk', max_steps: 3, track_with: ['tensorboard', 'wandb', 'stdout'] });

    const lines = workerLog().split('\n').filter((l) => l.includes('"run_id":"trk"') && l.includes('"file":"metrics.jsonl"'));
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['step 0', 'step 1', 'step 2']);
  });

  it('a tracker that cannot write is warned about and counted; the run completes and the other trackers get everything', async () => {
    const blocked = path.join(stack.server.stateDir, 'not-a-dir');
    writeFileSync(blocked, 'a file where tensorboard wants a directory');
    const r = stack.rollflow('run', stack.config, '--wait', '--run-id', 'trk-broken', '--set', `tracker_kwargs.log_dir=${blocked}/tb`, '--set', 'track_with=[tensorboard,stdout]');
    expect(r.status, r.stderr).toBe(0);
    expect(readJsonl(path.join(runDir('trk-broken'), 'metrics.jsonl'))).toHaveLength(3);
    expect(workerLog()).toMatch(/"run_id":"trk-broken","tracker":"tensorboard".*tracker failed; the run goes on without it/);
    expect(workerLog().split('\n').filter((l) => l.includes('"run_id":"trk-broken"') && l.includes('"msg":"step ')).length).toBe(3);
    // Counted once it failed to open; the process then went on without it, so nothing more failed.
    expect((await scrape(metricsUrl)).get('rollflow_tracker_errors_total{run_id="trk-broken",tracker="tensorboard"}')).toBe(1);
  });
});
