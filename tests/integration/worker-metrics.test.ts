/**
 * The worker's /metrics on a live stack (the worker `rollflow dev up`
 * started, on the port the config names): after a run, the run gauges equal
 * the last record of the run's metrics.jsonl, its counters the sum over the
 * records, and the Temporal SDK runtime's own metrics are on the same page.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRIC, RUN_COUNT } from '../../src/workflows/step-metrics';
import { freePort, readJsonl, ROOT } from './helpers/dev-server';
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
custom_envs:
  arith: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 16 }
val_env_manager: { num_env_groups: 2, group_size: 2, tags: [arith] }
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
    expect(run('reward_mean')).toBeCloseTo(last[METRIC.rewardMean] as number, 9);
    expect(run('staleness_dispatch_max')).toBe(last[METRIC.stalenessMax]);
    expect(run('idle_trainer_ratio')).toBeCloseTo(last[METRIC.trainerIdle] as number, 9);
    expect(run('trained_samples')).toBe(last[RUN_COUNT.trainedSamples]);
    expect(run('trained_samples')).toBe(3 * 8);
    expect(run('dispatched_groups')).toBe(last[RUN_COUNT.dispatchedGroups]);
    expect(run('in_flight_samples')).toBe(last[RUN_COUNT.inFlight]);
    expect(run('validation_reward_mean')).toBeCloseTo(validations.at(-1)![`val/reward_mean`] as number, 9);
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
});
