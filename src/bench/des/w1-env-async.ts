/**
 * W1: env-level async rollout vs lockstep (ROLL Flash Sec. 5.2.1, Fig. 9).
 * One batch of B trajectories of T turns each; env step latency ~ Normal(μ, σ)
 * truncated at 0, drawn exactly as the live latency_sim env draws it.
 */
import { z } from 'zod';
import { batchLatencyTable } from './env-latencies';
import { optionsJson, parseDesOptions, ratio, seconds } from './options';
import type { DesResult } from './result';
import { constantTable, lockstepTurnSeconds, trajectoryDurations } from './rollout';

export const W1Options = z.strictObject({
  seed: z.number().int().min(0).default(1).describe('Run seed: fixes which env seeds (dataset indices) the batch gets.'),
  batch: z.number().int().min(1).default(512).describe('Trajectories per step (B).'),
  group_size: z.number().int().min(1).default(1).describe('Trajectories per env group; members share the env seed, hence their latencies (see latency_keying).'),
  turns: z.number().int().min(1).default(22).describe('Turns per trajectory (T); 22 reproduces the paper\'s Fig. 9 numbers.'),
  mean_s: z.number().min(0).default(10).describe('Mean env step latency (μ), seconds.'),
  std_s: z.number().min(0).default(10).describe('Env step latency standard deviation (σ), truncated at 0.'),
  llm_s: z.number().min(0).default(0).describe('Generation seconds per turn, the same for every trajectory (0: negligible).'),
  dataset_size: z.number().int().min(1).default(4096).describe('Dataset size of the run; with dataset_size = batch every seed draws the same latencies.'),
  steps: z.number().int().min(1).default(1).describe('Synchronous steps simulated back to back (training time not counted).'),
  latency_keying: z.enum(['shared', 'independent']).default('shared').describe('shared: members of a group draw the same latencies, as the real env does today.'),
  time_scale: z.number().positive().default(1).describe('Multiplies every latency, as latency_sim\'s time_scale does.'),
});
export type W1Options = z.output<typeof W1Options>;

export function desW1(raw?: unknown): DesResult {
  const o = parseDesOptions('w1', W1Options, raw);
  if (o.batch % o.group_size !== 0) throw new RangeError(`w1: batch ${o.batch} is not a multiple of group_size ${o.group_size}`);
  const groups = o.batch / o.group_size;
  const model = { mean_s: o.mean_s, std_s: o.std_s, p_slow: 0, slow_factor: 1, p_stop: 0 };
  let lockstep = 0;
  let envAsync = 0;
  let meanTrajectory = 0;
  for (let step = 0; step < o.steps; step++) {
    const env = batchLatencyTable({ model, turns: o.turns, seed: o.seed, datasetSize: o.dataset_size, groups, groupSize: o.group_size, firstGroup: step * groups, keying: o.latency_keying, timeScale: o.time_scale });
    const times = { env, llm: constantTable(o.batch, o.turns, o.llm_s * o.time_scale) };
    const turnSeconds = lockstepTurnSeconds(times);
    const durations = trajectoryDurations(times);
    lockstep += turnSeconds.reduce((a, b) => a + b, 0);
    envAsync += Math.max(...durations);
    meanTrajectory += durations.reduce((a, b) => a + b, 0) / durations.length / o.steps;
  }
  return {
    workload: 'w1',
    seed: o.seed,
    options: optionsJson(o),
    baseline: 'lockstep',
    rollflow: 'env_async',
    modes: {
      lockstep: { makespan_s: seconds(lockstep), per_step_s: seconds(lockstep / o.steps) },
      env_async: { makespan_s: seconds(envAsync), per_step_s: seconds(envAsync / o.steps), mean_trajectory_s: seconds(meanTrajectory) },
    },
    speedup: ratio(lockstep / envAsync),
  };
}

/** bench/README.md W1 sweep: batch ∈ {64, 128, 256, 512} × (μ, σ) ∈ {(10,1), (10,7), (10,10), (50,5)}. */
export const W1_SWEEP = {
  batches: [64, 128, 256, 512],
  latencies: [
    [10, 1],
    [10, 7],
    [10, 10],
    [50, 5],
  ] as [number, number][],
};

export function desW1Sweep(raw?: { [key: string]: unknown }): DesResult[] {
  return W1_SWEEP.latencies.flatMap(([mean_s, std_s]) => W1_SWEEP.batches.map((batch) => desW1({ ...raw, batch, mean_s, std_s })));
}
