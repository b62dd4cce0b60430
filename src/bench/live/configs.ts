/**
 * Run configs and DES options of each benchmark cell, built in code from the
 * workload options. Pure: the result is a raw run config that the runner
 * validates with the config schema (parseConfig), exactly like a YAML file
 * given to `rollflow run`; the DES options describe the same cell, so the
 * simulator schedules the very latencies the run sleeps.
 */
import type { RunConfigInput } from '../../configs';
import type { W1Options } from '../des/w1-env-async';
import type { W1LiveOptions, W2LiveOptions, W2Mode, W3LiveOptions, W3Mode, W4LiveOptions, W5LiveOptions, W7LiveOptions } from './options';

export const BENCH_TASK_QUEUE = 'rollflow-bench';

export interface StackPorts {
  port_base: number;
}

/** Temporal and the sim engines on the bench's own ports: `inferenceServers` alike inference servers (+2, then +5, +6, …), a trainer, an env server. */
export function stackSection(o: StackPorts, engines: { inference: Record<string, unknown>; trainer: Record<string, unknown> }, inferenceServers = 1): Pick<RunConfigInput, 'temporal' | 'engines'> {
  const url = (offset: number) => `http://127.0.0.1:${o.port_base + offset}`;
  return {
    temporal: { address: `127.0.0.1:${o.port_base}`, ui_url: url(1), task_queue: BENCH_TASK_QUEUE, embedded: true },
    engines: {
      inference: Array.from({ length: inferenceServers }, (_, i) => ({ url: url(i === 0 ? 2 : 4 + i), backend: 'sim', options: engines.inference })),
      trainer: { url: url(3), backend: 'sim', options: engines.trainer },
      env: { url: url(4) },
    },
  };
}

/** The head of every benchmark run: one synchronous step (α = 0, stale samples accepted) of a seeded dataset. */
function oneSyncStep(exp: string, o: { seed: number; dataset_size: number }, runDir: string) {
  return { exp_name: exp, seed: o.seed, max_steps: 1, async_generation_ratio: 0, stale_policy: 'accept' as const, dataset_size: o.dataset_size, run_dir: runDir };
}

/** One rollout of B = groups × G trajectories of the latency_sim env; α = 0, one step, a free trainer. */
interface RolloutCell {
  exp: string;
  seed: number;
  groups: number;
  groupSize: number;
  turns: number;
  meanS: number;
  stdS: number;
  llmS: number;
  llmTokens: number;
  datasetSize: number;
  timeScale: number;
  mode: 'lockstep' | 'env_async';
  envCalls: 'turn' | 'activity' | 'local';
  /** trajectory_workflows (default true). */
  trajectoryWorkflows?: boolean;
  /** More latency_sim settings (failures, keying). */
  envConfig?: Record<string, unknown>;
  /** Trajectories a step takes (default: every env group's). */
  trajectoriesPerStep?: number;
  maxFailedGroupRatio?: number;
}

function rolloutConfig(c: RolloutCell, ports: StackPorts, runDir: string): RunConfigInput {
  const B = c.groups * c.groupSize;
  return {
    ...oneSyncStep(c.exp, { seed: c.seed, dataset_size: c.datasetSize }, runDir),
    rollout_mode: c.mode,
    ...(c.trajectoryWorkflows === false ? { trajectory_workflows: false } : {}),
    ...(c.maxFailedGroupRatio !== undefined ? { max_failed_group_ratio: c.maxFailedGroupRatio } : {}),
    train_env_manager: { num_env_groups: c.groups, group_size: c.groupSize, tags: ['bench_env'], ...(c.trajectoriesPerStep !== undefined ? { trajectories_per_step: c.trajectoriesPerStep } : {}) },
    custom_envs: {
      bench_env: {
        env_type: 'latency_sim',
        max_steps: c.turns,
        max_tokens_per_step: c.llmTokens,
        env_config: { turns: c.turns, mean_s: c.meanS, std_s: c.stdS, time_scale: c.timeScale, ...c.envConfig },
        env_calls: c.envCalls,
      },
    },
    actor_infer: { generating_args: { max_new_tokens: c.llmTokens } },
    ...stackSection(ports, {
      // c1 = 0 and a batch slot per trajectory: a turn's generation takes llm_s however many run together (the DES's assumption).
      inference: { max_batch: Math.max(64, B), sim: { c0: c.llmS / c.llmTokens, c1: 0, time_scale: c.timeScale, length: { dist: 'fixed', mean: c.llmTokens } } },
      trainer: { sim_seconds_per_sample: 0 },
    }),
  };
}

export interface W1Cell {
  batch: number;
  mean_s: number;
  std_s: number;
}

export function w1Cells(o: W1LiveOptions): W1Cell[] {
  return o.latencies.flatMap(([mean_s, std_s]) => o.batches.map((batch) => ({ batch, mean_s, std_s })));
}

/** W1: one group per trajectory (G = 1), so every trajectory has its own env seed and latencies. */
export function w1RunConfig(o: W1LiveOptions, cell: W1Cell, mode: 'lockstep' | 'env_async', runDir: string, durability: 'on' | 'off' = 'on', store: 'dir' | 's3' = 'dir'): RunConfigInput {
  const c = { exp: 'bench-w1', seed: o.seed, groups: cell.batch, groupSize: 1, turns: o.turns, meanS: cell.mean_s, stdS: cell.std_s, llmS: o.llm_s, llmTokens: o.llm_tokens, datasetSize: o.dataset_size, timeScale: o.time_scale, mode, envCalls: o.env_calls, trajectoryWorkflows: o.trajectory_workflows };
  // A bucket store takes the samples, the batches, the run's records and the trainer's states: everything the rollout writes.
  const config = { ...rolloutConfig(c, o, runDir), ...(store === 's3' ? { sample_store: { kind: 's3' as const, bucket: o.s3_bucket, prefix: 'bench' } } : {}) };
  if (durability === 'on') return config;
  // Without #12's durability additions: empty heartbeats (a retried generation starts over) and the trainer state saved at the start only.
  return { ...config, trainer_state_save_steps: 0, temporal: { ...config.temporal, worker: { heartbeat_partial_tokens: false } } };
}

export function w1DesOptions(o: W1LiveOptions, cell: W1Cell): Partial<W1Options> {
  return { seed: o.seed, batch: cell.batch, group_size: 1, turns: o.turns, mean_s: cell.mean_s, std_s: cell.std_s, llm_s: o.llm_s, dataset_size: o.dataset_size, steps: 1, latency_keying: 'shared', time_scale: o.time_scale };
}

/**
 * W2: env groups of the latency_sim env with fail-slow and fail-stop steps; a
 * fail-stop holds its trajectory for timeout_s, then the env gives up (fail),
 * which fails the group and frees its slot for the next prompt, as the DES
 * models it. exact runs baseline_env_groups × baseline_group_size and needs
 * all of them; redundant runs num_env_groups × group_size and takes the
 * first complete groups holding `batch` trajectories. Failed groups are the
 * workload, so the run tolerates any share of them.
 */
export function w2RunConfig(o: W2LiveOptions, mode: W2Mode, runDir: string): RunConfigInput {
  const [groups, groupSize] = mode === 'exact' ? [o.baseline_env_groups, o.baseline_group_size] : [o.num_env_groups, o.group_size];
  if (mode === 'exact' && groups * groupSize !== o.batch) throw new RangeError(`w2: the exact baseline ${groups} × ${groupSize} is not batch ${o.batch}`);
  const c: RolloutCell = {
    exp: 'bench-w2', seed: o.seed, groups, groupSize, turns: o.turns, meanS: o.mean_s, stdS: o.std_s, llmS: o.llm_s, llmTokens: o.llm_tokens, datasetSize: o.dataset_size, timeScale: o.time_scale, mode: 'env_async', envCalls: o.env_calls,
    envConfig: { p_slow: o.p_slow, slow_factor: o.slow_factor, p_stop: o.p_stop, timeout_s: o.timeout_s, fail_stop: 'fail', latency_keying: o.latency_keying },
    trajectoriesPerStep: o.batch,
    maxFailedGroupRatio: 1,
  };
  return rolloutConfig(c, o, runDir);
}

export function w7RunConfig(o: W7LiveOptions, inFlight: number, runDir: string): RunConfigInput {
  if (inFlight % o.group_size !== 0) throw new RangeError(`w7: in_flight ${inFlight} is not a multiple of group_size ${o.group_size}`);
  const c = { exp: 'bench-w7', seed: o.seed, groups: inFlight / o.group_size, groupSize: o.group_size, turns: o.turns, meanS: o.mean_s, stdS: o.std_s, llmS: o.llm_s, llmTokens: o.llm_tokens, datasetSize: o.dataset_size, timeScale: o.time_scale, mode: 'env_async' as const, envCalls: o.env_calls, trajectoryWorkflows: o.trajectory_workflows };
  return rolloutConfig(c, o, runDir);
}

export function w7DesOptions(o: W7LiveOptions, inFlight: number): Partial<W1Options> {
  return { seed: o.seed, batch: inFlight, group_size: o.group_size, turns: o.turns, mean_s: o.mean_s, std_s: o.std_s, llm_s: o.llm_s, dataset_size: o.dataset_size, steps: 1, latency_keying: 'shared', time_scale: o.time_scale };
}

/** Workers of each pool, as the DES splits them (desW5). */
export function w5Pools(o: Pick<W5LiveOptions, 'workers' | 'beta'>): { gen: number; train: number } {
  const train = Math.round(o.beta * o.workers);
  const gen = o.workers - train;
  if (train < 1 || gen < 1) throw new RangeError(`w5: beta ${o.beta} of ${o.workers} workers leaves a pool empty`);
  return { gen, train };
}

/** Seconds of one train step of B samples on the training pool (E = 1), after time_scale. */
export function w5TrainStepS(o: W5LiveOptions): number {
  return (o.batch * o.train_s_per_sample * o.time_scale) / w5Pools(o).train;
}

/**
 * W5: single-turn samples whose generation time is their length × s_per_token
 * on a sim server with one batch slot per generation worker (c1 = 0: Prop. 1's
 * K_gen workers, queue scheduling); the sim trainer sleeps the step time.
 */
export function w5RunConfig(o: W5LiveOptions, alpha: number, runDir: string): RunConfigInput {
  if (o.batch % o.group_size !== 0) throw new RangeError(`w5: batch ${o.batch} is not a multiple of group_size ${o.group_size}`);
  const maxTokens = Math.max(1, Math.round(o.max_gen_s / o.s_per_token));
  return {
    exp_name: 'bench-w5',
    seed: o.seed,
    max_steps: o.steps,
    async_generation_ratio: alpha,
    stale_policy: 'accept',
    partial_rollout: true,
    dataset_size: o.dataset_size,
    rollout_mode: 'env_async',
    steps_per_workflow_run: o.steps,
    run_dir: runDir,
    train_env_manager: { num_env_groups: o.batch / o.group_size, group_size: o.group_size, tags: ['bench_gen'] },
    custom_envs: { bench_gen: { env_type: 'latency_sim', max_steps: 1, max_tokens_per_step: maxTokens, env_config: { turns: 1, mean_s: 0, std_s: 0 } } },
    actor_infer: { generating_args: { max_new_tokens: maxTokens } },
    ...stackSection(o, {
      inference: { max_batch: w5Pools(o).gen, sim: { c0: o.s_per_token, c1: 0, time_scale: o.time_scale, length: { dist: 'lognormal', mean: o.mean_gen_s / o.s_per_token, sigma: o.sigma_sample } } },
      trainer: { sim_seconds_per_sample: w5TrainStepS(o) / o.batch },
    }),
  };
}

/**
 * W4: one synchronous step of P prompts × n single-turn responses on K sim
 * servers whose decode step over b sequences takes c0 + c1·b (memory-bound
 * decode). The sim draws each response's length: a log-normal per response
 * times a factor of its prompt (length.sigma_prompt), so a hard prompt's n
 * responses all run long. `replicate` is is_num_return_sequences_expand.
 */
export function w4RunConfig(o: W4LiveOptions, replicate: boolean, runDir: string): RunConfigInput {
  return {
    ...oneSyncStep('bench-w4', o, runDir),
    is_num_return_sequences_expand: replicate,
    train_env_manager: { num_env_groups: o.prompts, group_size: o.n, tags: ['bench_gen'] },
    custom_envs: { bench_gen: { env_type: 'latency_sim', max_steps: 1, max_tokens_per_step: o.max_tokens, env_config: { turns: 1, mean_s: 0, std_s: 0 }, env_calls: replicate ? o.env_calls : 'auto' } },
    actor_infer: { generating_args: { max_new_tokens: o.max_tokens } },
    ...stackSection(
      o,
      {
        inference: {
          max_batch: o.max_batch,
          max_n: Math.max(64, o.n),
          max_tokens_cap: Math.max(4096, o.max_tokens),
          sim: { c0: o.c0_s, c1: o.c1_s, time_scale: o.time_scale, length: { dist: 'lognormal', mean: o.mean_tokens, sigma: o.sigma_sample, sigma_prompt: o.sigma_prompt } },
        },
        trainer: { sim_seconds_per_sample: 0 },
      },
      o.servers,
    ),
  };
}

/**
 * W3: one synchronous step that needs P groups of k responses passing the std
 * filter. The latency_sim env (one instant turn) draws each response's length
 * and whether it solves its prompt with the DES's own draws (draw_seed = the
 * run seed), so the DES schedules exactly what the run generates. batch is
 * the run's waves (generate_opt_level 0); queue refills as groups are judged,
 * with max_additional_running_prompts spares.
 */
export function w3RunConfig(o: W3LiveOptions, mode: W3Mode, runDir: string): RunConfigInput {
  return {
    ...oneSyncStep('bench-w3', o, runDir),
    is_num_return_sequences_expand: true,
    group_filter: 'std',
    generate_opt_level: mode === 'batch' ? 0 : 1,
    max_additional_running_prompts: mode === 'queue' ? o.max_additional_running_prompts : 0,
    train_env_manager: { num_env_groups: o.prompts, group_size: o.k, tags: ['bench_solve'] },
    custom_envs: {
      bench_solve: {
        env_type: 'latency_sim',
        max_steps: 1,
        max_tokens_per_step: o.max_tokens,
        env_calls: o.env_calls,
        env_config: {
          turns: 1,
          mean_s: 0,
          std_s: 0,
          draw_seed: o.seed,
          response: { mean_tokens: o.mean_tokens, sigma_prompt: o.sigma_prompt, sigma_sample: o.sigma_sample, max_tokens: o.max_tokens },
          solve: { p_easy: o.p_easy, p_hard: o.p_hard },
        },
      },
    },
    actor_infer: { generating_args: { max_new_tokens: o.max_tokens } },
    ...stackSection(
      o,
      {
        // The env sets every response's length (sim_response_length); the sim's own length draw is never used.
        inference: { max_batch: o.max_batch, max_tokens_cap: Math.max(4096, o.max_tokens), sim: { c0: o.c0_s, c1: o.c1_s, time_scale: o.time_scale, length: { dist: 'fixed', mean: 1 } } },
        trainer: { sim_seconds_per_sample: 0 },
      },
      o.servers,
    ),
  };
}
