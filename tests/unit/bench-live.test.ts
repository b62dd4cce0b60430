// `rollflow bench` on the real system, without the system: the run configs it
// builds (valid, and describing the very cell the DES simulates) and the
// report arithmetic on hand-made metrics records.
import { describe, expect, it } from 'vitest';
import { benchCommand, commandLine, rawOptions } from '../../src/cli/bench';
import { parseConfig } from '../../src/configs';
import { batchLatencyTable, desW1, desW3, desW4, dispatchOrder } from '../../src/bench/des';
import {
  activitiesPerTrajectory,
  dispatchRamp,
  genSecondsTable,
  lengthsByPrompt,
  overhead,
  parseLiveOptions,
  dispatchIndex,
  rolloutMakespan,
  summarizeSteps,
  speedup,
  w1DesOptions,
  w1Report,
  w1RunConfig,
  w1Variants,
  w2Report,
  w2RunConfig,
  w3Report,
  w3RunConfig,
  w4Report,
  w4RunConfig,
  w5Des,
  w5Pools,
  w5Row,
  w5RunConfig,
  w7DesOptions,
  w7Report,
  w7RunConfig,
} from '../../src/bench/live';
import type { RunOutcome } from '../../src/bench/live/runner';
import { emptyTotals } from '../../src/workflows/run-state';
import { METRIC } from '../../src/core';
import { stepLatency } from '../../src/envs/latency';

const step = (n: number, wait: number, train: number, sync: number, idleRollout: number, samples = 4) => ({
  run_id: 'r',
  step: n,
  [METRIC.waitBatch]: wait,
  [METRIC.train]: train,
  [METRIC.syncWeights]: sync,
  [METRIC.rolloutIdle]: idleRollout,
  [METRIC.samples]: samples,
  [METRIC.stalenessMax]: n % 2,
});

const outcome = (metrics: ReturnType<typeof step>[], extra: Partial<RunOutcome> = {}): RunOutcome => ({
  run_id: 'r',
  ok: true,
  metrics,
  store_dir: '/nonexistent',
  wall_s: 1,
  load1_before: 0,
  load1_after: 0,
  cpu_s: { server: 0, worker: 0, engines: 0 },
  logged: { server: {}, worker: {} },
  ...extra,
});

describe('run configs', () => {
  const w1 = parseLiveOptions('w1', { batches: [8], latencies: [[10, 7]], turns: 5, time_scale: 0.1 });
  const cell = { batch: 8, mean_s: 10, std_s: 7 };

  it('W1: a valid run config of B groups of one, α = 0, one step, in the mode asked', () => {
    for (const mode of ['lockstep', 'env_async'] as const) {
      const { config, derived } = parseConfig(w1RunConfig(w1, cell, mode, '/tmp/runs'), 'bench');
      expect([derived.samples_per_step, derived.group_size, derived.max_samples_in_system]).toEqual([8, 1, 8]);
      expect([config.rollout_mode, config.max_steps, config.async_generation_ratio]).toEqual([mode, 1, 0]);
      expect(config.temporal.address).toBe('127.0.0.1:7260'); // the bench's own ports, not a user's 7233
      const sim = config.engines.inference[0]!.options.sim as { c0: number; time_scale: number; length: { mean: number } };
      // 4 tokens × 0.025 s = llm_s = 0.1 s per turn before the time scale, as the DES is told
      expect(sim.c0 * sim.length.mean).toBeCloseTo(w1.llm_s, 12);
      expect(config.engines.inference[0]!.options.max_batch).toBeGreaterThanOrEqual(8);
    }
  });

  it('W1: the run sleeps exactly the latencies the DES schedules (same env seeds, same draws)', () => {
    const { config } = parseConfig(w1RunConfig(w1, cell, 'env_async', '/tmp/runs'), 'bench');
    const env = config.custom_envs.bench_env!.env_config as { mean_s: number; std_s: number; turns: number; time_scale: number };
    const seedAt = dispatchOrder(config.dataset_size, config.seed);
    const model = { mean_s: env.mean_s, std_s: env.std_s, p_slow: 0, slow_factor: 1, p_stop: 0 };
    // what latency_sim sleeps for group g's episode: stepLatency(config, envSeed, turn) × time_scale
    const slept = Array.from({ length: 8 }, (_, g) => Array.from({ length: env.turns }, (_, t) => stepLatency(model, seedAt(g), t) * env.time_scale));
    const d = w1DesOptions(w1, cell);
    expect(batchLatencyTable({ model, turns: d.turns!, seed: d.seed!, datasetSize: d.dataset_size!, groups: 8, groupSize: 1, timeScale: d.time_scale })).toEqual(slept);
  });

  it('W1 on a bucket store: the same run with its samples, records and trainer states in the bucket, and nothing else changed', () => {
    const onBucket = parseConfig(w1RunConfig(w1, cell, 'env_async', '/tmp/runs', 'on', 's3'), 'bench');
    const onDir = parseConfig(w1RunConfig(w1, cell, 'env_async', '/tmp/runs', 'on', 'dir'), 'bench');
    expect(onBucket.derived.sample_store).toMatchObject({ kind: 's3', bucket: 'rollflow', prefix: 'bench/' });
    expect(onDir.derived.sample_store.kind).toBe('dir');
    expect({ ...onBucket.config, sample_store: undefined }).toEqual({ ...onDir.config, sample_store: undefined });
  });

  it('W1 variants: the baseline first, then each other durability and each other store, each differing from the baseline in one thing', () => {
    expect(w1Variants({ durability: ['on'], stores: ['dir'] })).toEqual([{ durability: 'on', store: 'dir' }]);
    expect(w1Variants({ durability: ['on', 'off'], stores: ['dir', 's3'] })).toEqual([
      { durability: 'on', store: 'dir' },
      { durability: 'off', store: 'dir' },
      { durability: 'on', store: 's3' },
    ]);
    expect(() => parseLiveOptions('w1', { stores: ['nfs'] })).toThrow(/stores/);
  });

  it('W7: N trajectories in groups of G; N must be a multiple of G', () => {
    const w7 = parseLiveOptions('w7', { group_size: 4, turns: 2 });
    const { derived } = parseConfig(w7RunConfig(w7, 256, '/tmp/runs'), 'bench');
    expect([derived.samples_per_step, derived.groups_per_step]).toEqual([256, 64]);
    expect(desW1(w7DesOptions(w7, 256)).options.batch).toBe(256);
    expect(() => w7RunConfig(w7, 258, '/tmp/runs')).toThrow('not a multiple of group_size 4');
  });

  it('W5: K_gen batch slots, the train step B·μ_train/(βK), lognormal lengths of mean μ_gen / s_per_token', () => {
    const w5 = parseLiveOptions('w5', { batch: 64, workers: 16, beta: 0.25, time_scale: 0.5 });
    expect(w5Pools(w5)).toEqual({ gen: 12, train: 4 });
    const { config, derived } = parseConfig(w5RunConfig(w5, 2, '/tmp/runs'), 'bench');
    expect([derived.samples_per_step, derived.max_samples_in_system, config.stale_policy]).toEqual([64, 192, 'accept']);
    const inf = config.engines.inference[0]!.options as { max_batch: number; sim: { c0: number; c1: number; length: { dist: string; mean: number } } };
    expect([inf.max_batch, inf.sim.c1, inf.sim.length.dist]).toEqual([12, 0, 'lognormal']);
    expect(inf.sim.length.mean * inf.sim.c0).toBeCloseTo(10, 12); // μ_gen = 10 s
    // 64 samples × 6 s / 4 training workers × 0.5 = 48 s per step
    expect((config.engines.trainer.options.sim_seconds_per_sample as number) * 64).toBeCloseTo(48, 9);
    expect(config.custom_envs.bench_gen!.max_tokens_per_step).toBe(1000); // max_gen_s 100 / 0.1 s per token
  });

  it('W4: K alike sim servers on their own ports, P groups of n, one request per group only without replication', () => {
    const w4 = parseLiveOptions('w4', { prompts: 8, n: 4, servers: 3 });
    for (const replicate of [false, true]) {
      const { config, derived } = parseConfig(w4RunConfig(w4, replicate, '/tmp/runs'), 'bench');
      expect([derived.samples_per_step, derived.groups_per_step, config.is_num_return_sequences_expand]).toEqual([32, 8, replicate]);
      expect(config.engines.inference.map((e) => e.url)).toEqual(['http://127.0.0.1:7262', 'http://127.0.0.1:7265', 'http://127.0.0.1:7266']);
      const sim = config.engines.inference[2]!.options.sim as { c0: number; c1: number; length: { sigma: number; sigma_prompt: number } };
      expect([sim.c0, sim.c1, sim.length.sigma, sim.length.sigma_prompt]).toEqual([0.01, 0.001, 0.4, 0.8]);
      expect(config.custom_envs.bench_gen!.env_calls).toBe(replicate ? 'local' : 'auto');
    }
  });

  it('W2: exact needs every group; redundant runs more or larger groups and takes ⌈batch / size⌉; fail-stops give up as in the DES', () => {
    const w2 = parseLiveOptions('w2', { batch: 16, baseline_env_groups: 4, baseline_group_size: 4, num_env_groups: 5, group_size: 6, seed: 2 });
    const exact = parseConfig(w2RunConfig(w2, 'exact', '/tmp/runs'), 'bench');
    const redundant = parseConfig(w2RunConfig(w2, 'redundant', '/tmp/runs'), 'bench');
    expect([exact.derived.groups_per_step, exact.derived.spare_groups, exact.derived.max_samples_in_system]).toEqual([4, 0, 16]);
    expect([redundant.derived.groups_per_step, redundant.derived.spare_groups, redundant.derived.max_samples_in_system]).toEqual([3, 2, 30]);
    for (const { config } of [exact, redundant]) {
      expect([config.max_failed_group_ratio, config.max_steps, config.async_generation_ratio, config.seed]).toEqual([1, 1, 0, 2]);
      expect(config.custom_envs.bench_env!.env_config).toMatchObject({ turns: 22, mean_s: 10, std_s: 5, p_slow: 0.05, slow_factor: 5, p_stop: 0.01, timeout_s: 120, fail_stop: 'fail', latency_keying: 'shared' });
    }
    expect(() => w2RunConfig({ ...w2, baseline_env_groups: 3 }, 'exact', '/tmp/runs')).toThrow('the exact baseline 3 × 4 is not batch 16');
  });

  it('W3: P groups of k past the std filter; batch in waves, queue with the spares; the env draws what the DES draws', () => {
    const w3 = parseLiveOptions('w3', { prompts: 4, k: 8, max_additional_running_prompts: 6, seed: 5 });
    const modes = (['batch', 'queue', 'queue_no_additional'] as const).map((mode) => parseConfig(w3RunConfig(w3, mode, '/tmp/runs'), 'bench'));
    expect(modes.map(({ config }) => [config.generate_opt_level, config.max_additional_running_prompts])).toEqual([[0, 0], [1, 6], [1, 0]]);
    // admission: (1 + 0)·B plus the spares
    expect(modes.map(({ derived }) => derived.max_samples_in_system)).toEqual([32, 80, 32]);
    for (const { config, derived } of modes) {
      expect([derived.samples_per_step, config.group_filter, config.is_num_return_sequences_expand, config.max_steps, config.async_generation_ratio]).toEqual([32, 'std', true, 1, 0]);
      const env = config.custom_envs.bench_solve!.env_config as { draw_seed: number; response: { mean_tokens: number; max_tokens: number }; solve: { p_easy: number } };
      expect([env.draw_seed, env.response.mean_tokens, env.response.max_tokens, env.solve.p_easy]).toEqual([5, 1000, 4096, 0.3]);
      expect(config.engines.inference).toHaveLength(4);
    }
    expect(() => parseLiveOptions('w3', { replicate: false })).toThrow('w3.replicate');
  });

  it('a bad option names the key and the value', () => {
    expect(() => parseLiveOptions('w1', { batch: 3 })).toThrow('w1.batch: got 3; unknown key; did you mean "batches"?');
    expect(() => parseLiveOptions('w5', { beta: 1 })).toThrow('w5.beta');
  });
});

describe('report arithmetic', () => {
  it('speedup, overhead and activities per trajectory', () => {
    expect(speedup(90, 36)).toBe(2.5);
    expect(overhead(42, 40)).toBe(0.05); // 42 / 40 − 1
    expect(activitiesPerTrajectory(22)).toBe(46); // reset + 22 × (generate, step) + finish
  });

  it('rollout makespan is step 0\'s wait_batch', () => {
    expect(rolloutMakespan([step(1, 9, 0, 0, 0), step(0, 12.5, 0.1, 0.2, 0)])).toBe(12.5);
    expect(() => rolloutMakespan([])).toThrow('no metrics for step 0');
  });

  it('run totals weight each step\'s idle ratios by its duration', () => {
    // step 0: 6 + 3 + 1 = 10 s, rollout idle 40% = 4 s; step 1: 2 + 3 + 0 = 5 s, idle 20% = 1 s
    const t = summarizeSteps([step(0, 6, 3, 1, 0.4), step(1, 2, 3, 0, 0.2)]);
    expect(t).toEqual({ steps: 2, samples: 8, makespan_s: 15, samples_per_s: 0.5333, trainer_idle_ratio: 0.5333, rollout_idle_ratio: 0.3333, sync_s: 1, staleness_max: 1 });
  });

  it('sample uids map to their dispatch index across epochs', () => {
    expect(dispatchIndex('e0-p17-s3', 100)).toEqual({ group: 17, member: 3 });
    expect(dispatchIndex('e2-p5-s0', 100)).toEqual({ group: 205, member: 0 });
    expect(() => dispatchIndex('bogus', 100)).toThrow('not a sample uid');
  });

  it('W1 cell: both speedups and the overhead from the two makespans', () => {
    const r = w1Report({ turns: 2, time_scale: 0.5, llm_s: 0.1 }, { batch: 4, mean_s: 10, std_s: 10 }, 60, 30, {
      lockstep: outcome([step(0, 66, 0, 0, 0)]),
      env_async: outcome([step(0, 33, 0, 0, 0)]),
    });
    expect([r.baseline_makespan_s, r.rollflow_makespan_s, r.measured_speedup, r.des_speedup]).toEqual([66, 33, 2, 2]);
    expect([r.overhead, r.baseline_overhead, r.speedup_vs_des]).toEqual([0.1, 0.1, 0]);
    expect([r.env_step_mean_s, r.rollflow_activities_per_s]).toEqual([5, 0.73]); // 4 × 6 activities / 33 s
    const failed = w1Report({ turns: 2, time_scale: 1, llm_s: 0 }, { batch: 4, mean_s: 1, std_s: 0 }, 2, 2, { env_async: outcome([], { ok: false, error: 'timeout after 9 s' }) });
    expect([failed.rollflow_makespan_s, failed.measured_speedup, failed.overhead]).toEqual([null, null, null]);
  });

  it('W7 cell: sustained only without errors and within max_overhead', () => {
    const o = { turns: 4, time_scale: 1, mean_s: 10, std_s: 5, llm_s: 0.1, group_size: 4, max_overhead: 0.1 };
    const ok = w7Report(o, 256, 50, outcome([step(0, 54, 0, 0, 0)]));
    expect([ok.overhead, ok.trajectories_per_s, ok.activities_per_s, ok.sustained]).toEqual([0.08, 4.74, 47.41, true]);
    expect(w7Report(o, 256, 50, outcome([step(0, 56, 0, 0, 0)])).sustained).toBe(false);
    expect(w7Report(o, 256, 50, outcome([], { ok: false, error: 'boom' })).errors.run).toBe('boom');
  });

  it('W5: the DES of the lengths a run generated, and speedups over α = 0', () => {
    // 2 generation + 2 training workers, 1 s per sample, train step 4 × 1 s / 2 = 2 s; B = 4, 2 steps
    const o = parseLiveOptions('w5', { batch: 4, steps: 2, workers: 4, beta: 0.5, train_s_per_sample: 1, s_per_token: 1, time_scale: 1, dataset_size: 100 });
    const tokens = new Map(Array.from({ length: 8 }, (_, g) => [`e0-p${g}-s0`, 1] as const));
    const gen = genSecondsTable(tokens, o);
    expect(gen(7, 0)).toBe(1);
    expect(() => gen(8, 0)).toThrow('no trained sample for group 8');
    // α = 0: per step 2 rounds of 1 s on 2 workers, then 2 s of training: 8 s; α = 1 overlaps step 2's generation with step 1's training: 2 + 2 + 2 = 6 s
    expect(w5Des(o, 0, gen).makespan_s).toBe(8);
    expect(w5Des(o, 1, gen).makespan_s).toBe(6);
    const incomplete = w5Row(o, 0, outcome([step(0, 1, 1, 0, 0)]), undefined);
    expect([incomplete.makespan_s, incomplete.des]).toEqual([null, null]); // 1 of 2 steps recorded: nothing is made up
  });
});

describe('W4 report', () => {
  const o = parseLiveOptions('w4', { prompts: 2, n: 2, servers: 2, max_batch: 8, c0_s: 1, c1_s: 0, time_scale: 1, dataset_size: 100 });

  it('lengths by dispatch index and member, from the trained samples; a missing one is named', () => {
    const tokens = new Map([['e0-p0-s0', 4], ['e0-p0-s1', 3], ['e0-p1-s0', 1], ['e0-p1-s1', 2]]);
    expect(lengthsByPrompt(tokens, o)).toEqual([[4, 3], [1, 2]]);
    tokens.delete('e0-p1-s1');
    expect(() => lengthsByPrompt(tokens, o)).toThrow('no trained sample for 1 of 4 (prompt/member 1/1');
  });

  it('the DES of each mode on the lengths its run generated, and on the baseline\'s lengths alone', () => {
    // c0 = 1 s per decode step, c1 = 0: a sequence of L tokens takes L s, however many share its server.
    // n per request on the baseline's lengths: prompt 0 (4, 3) → server 0, prompt 1 (1, 2) → server 1: 4 s.
    // Replicated on its own lengths: 2, 2, 2, 1 alternate between the servers: 2 s; on the baseline's: 4 s (its longest response).
    const lengths = { n_per_request: [[4, 3], [1, 2]], replicated: [[2, 2], [2, 1]] };
    const runs = { n_per_request: outcome([step(0, 5, 0, 0, 0)]), replicated: outcome([step(0, 2.5, 0, 0, 0)]) };
    const r = w4Report(o, runs, lengths);
    expect([r.des_baseline_makespan_s, r.des_rollflow_makespan_s]).toEqual([4, 2]);
    expect([r.measured_speedup, r.des_speedup, r.overhead, r.baseline_overhead]).toEqual([2, 2, 0.25, 0.25]);
    expect(r.des_same_lengths).toEqual({ n_per_request_s: 4, replicated_s: 4, speedup: 1 });
    expect(r.mean_tokens).toEqual({ n_per_request: 3, replicated: 2 });
    // other arrival orders: prompt 1 first puts (1, 2) on server 0 and (4, 3) on server 1, still 4 s; replicated 2 s in any order
    expect(r.des_order_range).toEqual({ n_per_request: { min_s: 4, max_s: 4 }, replicated: { min_s: 2, max_s: 2 } });
    const failed = w4Report(o, { n_per_request: runs.n_per_request, replicated: outcome([], { ok: false, error: 'boom' }) }, { n_per_request: lengths.n_per_request });
    expect([failed.rollflow_makespan_s, failed.measured_speedup, failed.des_speedup, failed.overhead]).toEqual([null, null, null, null]);
  });

  it('the dispatch ramp: seconds from the first generate request to the median and the last', () => {
    expect(dispatchRamp([5000, 1000, 2000, 9000])).toEqual({ requests: 4, p50_s: 1, last_s: 8 });
    expect(dispatchRamp([])).toBeNull();
  });

  it('--des-only on w4 gives the DES of its own length sampler for the same options', async () => {
    const lines: string[] = [];
    await benchCommand((l) => lines.push(l), () => undefined).parseAsync(['w4', '--des-only', '--set', 'prompts=8', '--set', 'servers=2'], { from: 'user' });
    expect(JSON.parse(lines.join('\n'))).toEqual(desW4({ prompts: 8, servers: 2, time_scale: 0.25 }));
  });
});

describe('W2 report', () => {
  const o = parseLiveOptions('w2', { batch: 4, baseline_env_groups: 2, baseline_group_size: 2, num_env_groups: 3, group_size: 2 });
  const des = {
    exact: { makespan_s: 30, groups_needed: 2, groups_started: 3, groups_failed: 1, groups_running_at_end: 0, num_env_groups: 2, group_size: 2 },
    redundant: { makespan_s: 10, groups_needed: 2, groups_started: 3, groups_failed: 0, groups_running_at_end: 1, num_env_groups: 3, group_size: 2 },
  };
  const totals = (dispatchedGroups: number, failedGroups: number) => ({ ...emptyTotals(), dispatchedGroups, failedGroups, consumedSamples: 4 });
  const run = (wait: number, dispatched: number, failed: number) => outcome([step(0, wait, 0, 0, 0)], { status: { totals: totals(dispatched, failed) } as RunOutcome['status'] });

  it('both makespans against their DES, and the groups each started and lost', () => {
    const r = w2Report(o, { exact: run(33, 3, 1), redundant: run(12, 3, 0) }, des);
    expect([r.baseline_makespan_s, r.rollflow_makespan_s, r.measured_speedup, r.des_speedup]).toEqual([33, 12, 2.75, 3]);
    expect([r.overhead, r.baseline_overhead, r.speedup_vs_des]).toEqual([0.2, 0.1, -0.0833]);
    expect(r.modes.exact).toMatchObject({ groups_started: 3, des_groups_started: 3, groups_failed: 1, des_groups_failed: 1, num_env_groups: 2 });
    const failed = w2Report(o, { exact: run(33, 3, 1), redundant: outcome([], { ok: false, error: 'boom' }) }, des);
    expect([failed.rollflow_makespan_s, failed.measured_speedup, failed.overhead]).toEqual([null, null, null]);
  });
});

describe('W3 report', () => {
  const o = parseLiveOptions('w3', { prompts: 2, k: 2 });
  const des = {
    batch: { makespan_s: 12, prompts_started: 5, groups_passed: 2, groups_filtered: 3, tokens: 0, rounds: 3 },
    queue: { makespan_s: 4, prompts_started: 6, groups_passed: 2, groups_filtered: 2, tokens: 0 },
    queue_no_additional: { makespan_s: 8, prompts_started: 5, groups_passed: 2, groups_filtered: 3, tokens: 0 },
  };
  const totals = (dispatchedGroups: number, filteredGroups: number) => ({ ...emptyTotals(), dispatchedGroups, filteredGroups, consumedSamples: 4 });
  const withStatus = (wait: number, dispatched: number, filtered: number) => outcome([step(0, wait, 0, 0, 0)], { status: { totals: totals(dispatched, filtered) } as RunOutcome['status'] });

  it('speedups over the batch waves, each mode against its DES, and what each started and filtered', () => {
    const r = w3Report(o, { batch: withStatus(15, 5, 3), queue: withStatus(5, 7, 3), queue_no_additional: withStatus(10, 5, 3) }, des);
    expect([r.baseline_makespan_s, r.rollflow_makespan_s, r.measured_speedup, r.des_speedup, r.speedup_vs_des]).toEqual([15, 5, 3, 3, 0]);
    expect([r.overhead, r.baseline_overhead]).toEqual([0.25, 0.25]);
    expect(r.no_additional).toEqual({ measured_speedup: 1.5, des_speedup: 1.5 });
    expect(r.modes.queue).toMatchObject({ prompts_started: 7, des_prompts_started: 6, groups_filtered: 3, des_groups_filtered: 2 });
    expect(r.modes.batch).toMatchObject({ des_rounds: 3 });
  });

  it('a failed run leaves its figures null, the DES stays', () => {
    const r = w3Report(o, { batch: withStatus(15, 5, 3), queue: outcome([], { ok: false, error: 'boom' }) }, des);
    expect([r.rollflow_makespan_s, r.measured_speedup, r.overhead, r.des_speedup]).toEqual([null, null, null, 3]);
  });
});

describe('the bench command', () => {
  it('--set values are YAML: numbers and lists', () => {
    expect(rawOptions(['batches=[64,128]', 'latencies=[[10,1],[50,5]]', 'time_scale=0.1'])).toEqual({ batches: [64, 128], latencies: [[10, 1], [50, 5]], time_scale: 0.1 });
  });

  it('the recorded command can be pasted back into a shell', () => {
    expect(commandLine(['bench', 'w1', '--set', 'batches=[64,128]'])).toBe("rollflow bench w1 --set 'batches=[64,128]'");
  });

  it('--des-only prints the DES of the same cells as JSON, without Temporal', async () => {
    const lines: string[] = [];
    await benchCommand((l) => lines.push(l), () => undefined).parseAsync(['w1', '--des-only', '--set', 'batches=[16]', '--set', 'latencies=[[10,10]]', '--set', 'turns=3'], { from: 'user' });
    const r = JSON.parse(lines.join('\n'));
    expect(r).toEqual(desW1({ seed: 1, batch: 16, turns: 3, mean_s: 10, std_s: 10, llm_s: 0.1, time_scale: 0.1, dataset_size: 4096 }));
    lines.length = 0;
    await benchCommand((l) => lines.push(l), () => undefined).parseAsync(['w3', '--des-only', '--set', 'prompts=4'], { from: 'user' });
    expect(JSON.parse(lines.join('\n'))).toEqual(desW3({ prompts: 4, time_scale: 0.25 }));
  });
});
