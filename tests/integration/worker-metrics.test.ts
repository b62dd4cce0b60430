/**
 * The worker's /metrics on a live stack (the worker `rollflow dev up`
 * started, on the port the config names): after a run, the run gauges equal
 * the last record of the run's metrics.jsonl, its counters the sum over the
 * records, and the Temporal SDK runtime's own metrics are on the same page.
 * A second worker on the same host and address warns and works without them.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRIC, RUN_COUNT, TRAINER_PREFIX, VAL_METRIC } from '../../src/core';
import { taskQueuePollers } from '../../src/client/run-handle';
import type { SupervisorStatus } from '../../src/stack/supervisor';
import { freePort, readJsonl, ROOT, until } from './helpers/dev-server';
import { scrape } from './helpers/prometheus';
import { upSimStack, type SimStack } from './helpers/sim-stack';

const REPORTS = path.join(ROOT, '.state/test-reports');
let stack: SimStack;
let metricsUrl: string;

beforeAll(async () => {
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}`;
  stack = await upSimStack(
    'worker-metrics',
    `
exp_name: prom
max_steps: 3
eval_steps: 3
rollout_batch_size: 2
num_return_sequences_in_group: 4
async_generation_ratio: 1
custom_envs:
  # rewards of 0 and 1 by the env's own draws (the sim policy's random tokens would score 0 on every task),
  # so the reward gauges are compared with numbers that are not 0
  solver:
    env_type: latency_sim
    max_steps: 1
    max_tokens_per_step: 16
    env_config: { turns: 1, mean_s: 0, std_s: 0, draw_seed: 5, solve: { p_easy: 0.5, p_hard: 0.2 } }
train_env_manager: { num_env_groups: 2, group_size: 4, tags: [solver] }
val_env_manager: { num_env_groups: 2, group_size: 2, tags: [solver] }
`,
    {},
    `worker: { metrics_address: "127.0.0.1:${port}" }`,
  );
});

afterAll(async () => {
  await stack?.down();
});

describe('worker /metrics (Prometheus)', () => {
  it('serves the run\'s gauges and counters as its records say, beside the SDK runtime\'s metrics', async () => {
    const r = stack.rollflow('run', stack.config, '--wait', '--run-id', 'prom');
    expect(r.status, r.stderr).toBe(0);
    const runDir = path.join(stack.server.stateDir, 'run', 'prom');
    const records = readJsonl(path.join(runDir, 'metrics.jsonl'));
    const validations = readJsonl(path.join(runDir, 'validation.jsonl'));
    expect(records).toHaveLength(3);
    const last = records.at(-1)!;

    const m = await scrape(metricsUrl);
    // The page as scraped, kept for a person to read (.state/test-reports/worker-metrics.txt).
    mkdirSync(REPORTS, { recursive: true });
    writeFileSync(path.join(REPORTS, 'worker-metrics.txt'), await (await fetch(`${metricsUrl}/metrics`)).text());
    const run = (name: string) => m.get(`rollflow_run_${name}{run_id="prom"}`);
    expect(run('step')).toBe(3);
    expect(run('version')).toBe(last.version);
    expect(records.some((rec) => (rec[METRIC.rewardMean] as number) > 0)).toBe(true); // the env's draws solve some
    expect(run('reward_mean')).toBeCloseTo(last[METRIC.rewardMean] as number, 9);
    expect(run('batch_samples')).toBe(last[METRIC.samples]);
    expect(run('staleness_dispatch_mean')).toBeCloseTo(last[METRIC.stalenessMean] as number, 9);
    expect(run('staleness_dispatch_max')).toBe(last[METRIC.stalenessMax]);
    expect(run('staleness_oldest_token_max')).toBe(last[`${TRAINER_PREFIX}staleness/oldest_token_max`]);
    expect(run('partial_ratio')).toBeCloseTo(last[METRIC.partialRatio] as number, 9);
    expect(run('idle_trainer_ratio')).toBeCloseTo(last[METRIC.trainerIdle] as number, 9);
    expect(run('idle_rollout_ratio')).toBeCloseTo(last[METRIC.rolloutIdle] as number, 9);
    expect(run('buffered_samples')).toBe(last[RUN_COUNT.buffered]);
    expect(run('trained_samples')).toBe(last[RUN_COUNT.trainedSamples]);
    expect(run('trained_samples')).toBe(3 * 8);
    expect(run('dispatched_groups')).toBe(last[RUN_COUNT.dispatchedGroups]);
    expect(run('in_flight_samples')).toBe(last[RUN_COUNT.inFlight]);
    expect(run('validation_reward_mean')).toBeCloseTo(validations.at(-1)![VAL_METRIC.rewardMean] as number, 9);
    expect(run('validation_step')).toBe(3);
    // A counter adds each step's "since the previous step" count.
    const aborted = records.reduce((n, rec) => n + (rec[METRIC.syncAborted] as number), 0);
    expect(m.get('rollflow_run_sync_aborted_requests_total{run_id="prom"}') ?? 0).toBe(aborted);
    // The worker process, and the Temporal SDK runtime's own exporter, on the same page.
    expect(m.get('rollflow_worker_process_resident_memory_bytes')).toBeGreaterThan(0);
    expect([...m.keys()].some((k) => k.startsWith('temporal_'))).toBe(true);
  });

  it('every metric the Grafana dashboard queries is on the live page', async () => {
    const dash = readFileSync(path.join(ROOT, 'deploy/grafana/dashboards/rollflow.json'), 'utf8');
    const queried = new Set([...dash.matchAll(/\b((?:rollflow|temporal)_[a-z_]+)/g)].map((x) => x[1]!));
    const names = new Set([...(await scrape(metricsUrl)).keys()].map((k) => k.replace(/\{.*$/, '')));
    expect(queried.size).toBeGreaterThan(10);
    expect([...queried].filter((q) => !names.has(q))).toEqual([]);
  });

  it('a second worker on the same address warns that the port is taken and polls all the same; the first is left alone', async () => {
    const pids = path.join(stack.server.stateDir, 'pids');
    const firstPid = () => Number(readFileSync(path.join(pids, 'worker-worker-metrics.pid'), 'utf8').split('\n')[0]);
    const first = firstPid();
    const second = spawn(path.join(ROOT, 'bin/rollflow'), ['worker', stack.config], { env: { ...stack.server.env, ROLLFLOW_LOG_FORMAT: 'json' }, stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    second.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => second.once('exit', resolve));
    try {
      const identity = `${second.pid}@`;
      const polling = async () => (await taskQueuePollers(stack.client, 'default', 'worker-metrics')).some((p) => p.startsWith(identity));
      const withLog = (e: Error) => {
        throw new Error(`${e.message}\nthe second worker's log:\n${log}`);
      };
      await until(async () => (second.exitCode !== null || (await polling()) ? true : undefined), 'the second worker polling (or gone)', 120_000).catch(withLog);
      expect(second.exitCode, log).toBeNull();
      // (Logged before the worker polls, but read here from a pipe: waited for, not assumed.)
      await until(async () => (log.includes('worker metrics not served') ? true : undefined), 'the second worker\'s warning', 60_000).catch(withLog);
      expect(log).toContain(`worker metrics not served at ${new URL(metricsUrl).host}: the port is taken`);
      // The first worker's page is still the first worker's.
      expect((await scrape(metricsUrl)).get('rollflow_run_step{run_id="prom"}')).toBe(3);
      // Both beat, each in a file of its own: the supervisor never took the first for hung. (When they shared one
      // file, it read the second's pid there and killed the first: the second then took the free port, no warning.)
      const status = JSON.parse(readFileSync(path.join(pids, 'supervisor-worker-metrics.json'), 'utf8')) as SupervisorStatus;
      expect(status.parts['worker-worker-metrics']).toMatchObject({ pid: first, restarts: 0, hangKills: 0 });
      expect(firstPid()).toBe(first);
      expect(readdirSync(pids).filter((f) => f.endsWith('.alive')).sort()).toEqual([`worker-worker-metrics.${first}.alive`, `worker-worker-metrics.${second.pid}.alive`].sort());
    } finally {
      // SIGTERM stops a worker that runs; one stuck before running (a failed test) ignores it: SIGKILL after 30 s.
      second.kill('SIGTERM');
      const stuck = setTimeout(() => second.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(stuck);
    }
    // It stopped on SIGTERM, and took its alive file with it.
    expect(readdirSync(pids).filter((f) => f.endsWith('.alive'))).toEqual([`worker-worker-metrics.${first}.alive`]);
  });
});
