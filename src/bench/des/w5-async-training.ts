/**
 * W5: async vs sync training (ROLL Flash Sec. 3, Prop. 1–2, Table 1). A
 * generation pool of workers (Prop. 1's model: a worker generates one sample
 * at a time, queue scheduling, FIFO) feeds a trainer that takes B samples per
 * step. Admission is the run workflow's async-ratio rule (RunState): a group
 * of G samples may start only while
 *
 *     buffered + training + running + G <= floor((1 + α)·B)
 *
 * and the remaining steps still need it. The batch in training counts until
 * its step completes, so α = 0 is exactly synchronous: step n+1's generation
 * starts only after train step n. Weight syncs take no time (zero overhead).
 */
import { z } from 'zod';
import { endToEndBounds, generationBounds, queueCompletionBound } from './async-bounds';
import { dispatchOrder } from './dispatch-order';
import { EventQueue } from './event-queue';
import { optionsJson, parseDesOptions, ratio } from './options';
import type { DesModeResult, DesResult } from './result';
import { longTailDraw } from '../../envs/draws';

export interface AsyncTrainingPlan {
  samplesPerStep: number;
  groupSize: number;
  /** Async ratio α ≥ 0; fractional allowed. */
  alpha: number;
  steps: number;
  genWorkers: number;
  /** Seconds of one train step (B samples). */
  trainStepS: number;
}

export interface AsyncTrainingSchedule {
  makespan_s: number;
  samples_per_s: number;
  /** Share of the makespan the trainer waited for a batch. */
  trainer_idle_ratio: number;
  /** Share of the makespan with no sample running (the run metric idle/rollout). */
  rollout_idle_ratio: number;
  /** Share of generation-worker seconds spent generating. */
  gen_worker_utilization: number;
  /** Policy versions between a sample's start and the step that trains on it. */
  staleness_mean: number;
  staleness_max: number;
  /** Most samples buffered, training or running at once (the admission bound, as reached). */
  peak_samples_in_system: number;
  /** Mean and max generation seconds of the samples generated (Prop. 1's μ_gen and L_gen). */
  mu_gen_s: number;
  l_gen_s: number;
}

interface Group {
  startVersion: number;
  left: number;
}

/** `genSecondsOf(group, member)`: how long that sample of the n-th dispatched group takes to generate. */
export function asyncTrainingSchedule(plan: AsyncTrainingPlan, genSecondsOf: (group: number, member: number) => number): AsyncTrainingSchedule {
  const { samplesPerStep: B, groupSize: G } = plan;
  if (B % G !== 0) throw new RangeError(`samplesPerStep ${B} is not a multiple of groupSize ${G}`);
  // The epsilon keeps (1 + 0.1)·10 = 11.000000000000002 from flooring differently than the config's derived value.
  const maxInSystem = Math.floor((1 + plan.alpha) * B + 1e-9);
  const events = new EventQueue();
  const pending: { group: Group; seconds: number }[] = [];
  const buffer: Group[] = [];
  let freeWorkers = plan.genWorkers;
  let running = 0;
  let training = 0;
  let version = 0;
  let groupsDispatched = 0;
  let genSeconds = 0;
  let genMax = 0;
  let peak = 0;
  let trainBusy = 0;
  let idleSince: number | undefined = 0;
  let idle = 0;
  const staleness: number[] = [];
  const inSystem = () => buffer.length * G + training + running;

  const noteRolloutActivity = () => {
    if (running > 0 && idleSince !== undefined) {
      idle += events.now - idleSince;
      idleSince = undefined;
    } else if (running === 0 && idleSince === undefined) idleSince = events.now;
  };

  const startWork = () => {
    while (freeWorkers > 0 && pending.length > 0) {
      const { group, seconds: s } = pending.shift()!;
      freeWorkers--;
      genSeconds += s;
      genMax = Math.max(genMax, s);
      events.after(s, () => {
        freeWorkers++;
        if (--group.left === 0) {
          running -= G;
          buffer.push(group);
          noteRolloutActivity();
          train();
          dispatch();
        }
        startWork();
      });
    }
  };

  const dispatch = () => {
    while (inSystem() + G <= maxInSystem && inSystem() < (plan.steps - version) * B) {
      const n = groupsDispatched++;
      const group: Group = { startVersion: version, left: G };
      for (let m = 0; m < G; m++) pending.push({ group, seconds: genSecondsOf(n, m) });
      running += G;
    }
    peak = Math.max(peak, inSystem());
    noteRolloutActivity();
    startWork();
  };

  const train = () => {
    if (training > 0 || buffer.length * G < B) return;
    const batch = buffer.splice(0, B / G);
    for (const g of batch) for (let m = 0; m < G; m++) staleness.push(version - g.startVersion);
    training = B;
    trainBusy += plan.trainStepS;
    events.after(plan.trainStepS, () => {
      training = 0;
      version++; // the new weights are served at once (zero-time sync)
      if (version === plan.steps) return events.stop();
      train();
      dispatch();
    });
  };

  dispatch();
  const makespan = events.run();
  if (idleSince !== undefined) idle += makespan - idleSince;
  const samples = plan.steps * B;
  return {
    makespan_s: makespan,
    samples_per_s: makespan > 0 ? samples / makespan : Infinity,
    trainer_idle_ratio: makespan > 0 ? 1 - trainBusy / makespan : 0,
    rollout_idle_ratio: makespan > 0 ? idle / makespan : 0,
    gen_worker_utilization: makespan > 0 ? genSeconds / (plan.genWorkers * makespan) : 0,
    staleness_mean: staleness.reduce((a, b) => a + b, 0) / staleness.length,
    staleness_max: Math.max(...staleness),
    peak_samples_in_system: peak,
    mu_gen_s: genSeconds / samples,
    l_gen_s: genMax,
  };
}

export const W5Options = z.strictObject({
  seed: z.number().int().min(0).default(1).describe('Run seed: fixes the prompts and their generation times.'),
  batch: z.number().int().min(1).default(64).describe('Samples per train step (B = N).'),
  group_size: z.number().int().min(1).default(1).describe('Samples per group; admission and batches count whole groups.'),
  steps: z.number().int().min(1).default(20).describe('Train steps simulated.'),
  alphas: z.array(z.number().min(0)).min(1).default([0, 0.5, 1, 2, 4]).describe('Async ratios to simulate; 0 is the synchronous baseline.'),
  rollflow_alpha: z.number().min(0).default(2).describe('The α the speedup reports (Table 1: 2 in most settings).'),
  workers: z.number().int().min(2).default(16).describe('Workers K, split between generation and training.'),
  beta: z.number().gt(0).lt(1).default(0.5).describe('Share of the K workers that train (β).'),
  mean_gen_s: z.number().positive().default(10).describe('Mean generation seconds per sample (μ_gen before the cut).'),
  sigma_prompt: z.number().min(0).default(0).describe('Log-space std of a per-prompt factor shared by a group\'s samples.'),
  sigma_sample: z.number().min(0).default(1).describe('Log-space std of the per-sample generation time (long tail).'),
  max_gen_s: z.number().positive().default(100).describe('Longest a generation may take (L_gen bound; max_tokens).'),
  train_s_per_sample: z.number().min(0).default(6).describe('μ_train: training seconds per sample on one worker; a step takes E·B·μ_train/(βK).'),
  reuse: z.number().int().min(1).default(1).describe('E: times each sample is trained on.'),
  dataset_size: z.number().int().min(1).default(4096).describe('Dataset size of the run (prompts are drawn in its seeded order).'),
  time_scale: z.number().positive().default(1).describe('Multiplies every duration.'),
});
export type W5Options = z.output<typeof W5Options>;

export function desW5(raw?: unknown): DesResult {
  const o = parseDesOptions('w5', W5Options, raw);
  const trainWorkers = Math.round(o.beta * o.workers);
  const genWorkers = o.workers - trainWorkers;
  if (trainWorkers < 1 || genWorkers < 1) throw new RangeError(`w5: beta ${o.beta} of ${o.workers} workers leaves a pool empty`);
  const beta = trainWorkers / o.workers; // the split actually simulated
  const promptAt = dispatchOrder(o.dataset_size, o.seed);
  const tail = { mean: o.mean_gen_s, sigma_prompt: o.sigma_prompt, sigma_sample: o.sigma_sample, max: o.max_gen_s };
  const genSecondsOf = (group: number, member: number) => longTailDraw(tail, o.seed, promptAt(group), member) * o.time_scale;
  const trainStepS = (o.reuse * o.batch * o.train_s_per_sample * o.time_scale) / trainWorkers;
  const alphas = [...new Set([0, ...o.alphas, o.rollflow_alpha])].sort((a, b) => a - b);
  const muTrain = o.train_s_per_sample * o.time_scale;
  const modes: Record<string, DesModeResult> = {};
  for (const alpha of alphas) {
    const s = asyncTrainingSchedule({ samplesPerStep: o.batch, groupSize: o.group_size, alpha, steps: o.steps, genWorkers, trainStepS }, genSecondsOf);
    const bound = { workers: o.workers, samplesPerStep: o.batch, alpha, muGen: s.mu_gen_s, lGen: s.l_gen_s, beta, muTrain, reuse: o.reuse };
    const prop2 = endToEndBounds(bound);
    // α = 0 on split pools is neither of Prop. 2's settings: bound it by Prop. 1 eq. 4 on the generation pool plus the train step.
    const stepBound = alpha === 0 ? queueCompletionBound(o.batch, genWorkers, s.mu_gen_s, s.l_gen_s) + trainStepS : prop2.async_step_s;
    modes[`alpha=${alpha}`] = {
      ...roundAll(s),
      step_bound_s: ratio(stepBound),
      // A bound on a step's time is a floor on throughput: N / bound.
      min_samples_per_s: ratio(o.batch / stepBound),
      prop1: roundAll(generationBounds(bound)),
      prop2: roundAll(prop2),
    };
  }
  // Prop. 2's Sync: all K workers generate, then all K train (no split pools).
  const colocatedPlan = { samplesPerStep: o.batch, groupSize: o.group_size, alpha: 0, steps: o.steps, genWorkers: o.workers, trainStepS: (o.reuse * o.batch * muTrain) / o.workers };
  const colocated = asyncTrainingSchedule(colocatedPlan, genSecondsOf);
  const eq8 = endToEndBounds({ workers: o.workers, samplesPerStep: o.batch, alpha: 0, muGen: colocated.mu_gen_s, lGen: colocated.l_gen_s, beta, muTrain, reuse: o.reuse }).sync_step_s;
  modes['sync_colocated'] = { ...roundAll(colocated), step_bound_s: ratio(eq8), min_samples_per_s: ratio(o.batch / eq8) };
  const base = modes['alpha=0']!;
  const flash = modes[`alpha=${o.rollflow_alpha}`]!;
  return {
    workload: 'w5',
    seed: o.seed,
    options: optionsJson({ ...o, gen_workers: genWorkers, train_workers: trainWorkers, train_step_s: trainStepS }),
    baseline: 'alpha=0',
    rollflow: `alpha=${o.rollflow_alpha}`,
    modes,
    speedup: ratio(base.makespan_s / flash.makespan_s), // same samples in both: the throughput ratio
  };
}

function roundAll<T extends object>(values: T): { [K in keyof T]: number } {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Math.round((v as number) * 1e4) / 1e4])) as { [K in keyof T]: number };
}

