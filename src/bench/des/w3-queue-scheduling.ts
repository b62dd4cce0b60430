/**
 * W3: queue scheduling with dynamic filtering (ROLL Flash Sec. 5.1.1, Fig. 7).
 * The step needs P groups (k responses each) that pass the std filter.
 *
 * - batch: generate a batch, wait for all of it, reward, filter; while fewer
 *   than P groups passed, generate the groups still missing. The slowest
 *   response gates every round.
 * - queue: each prompt is its own task; its group is rewarded as soon as its
 *   k responses are done; the step ends, aborting the rest, the moment the
 *   P-th group passes.
 *
 * Both follow rollflow's admission control (run.ts, run-state.ts), which
 * counts passed groups waiting for the trainer: at most
 * P + max_additional_running_prompts groups are running or passed at once,
 * so a passed group's slot is not refilled. The batch mode is the run's
 * waves (generate_opt_level 0): a wave starts once none is running, with
 * what admission allows, the P − passed groups still missing.
 *
 * Both modes see the same prompts in the same order, with the same lengths
 * and the same rewards, on the same servers.
 */
import { z } from 'zod';
import { dispatchOrder } from './dispatch-order';
import { EventQueue } from './event-queue';
import { SimulatedInferenceServers, type ServerModel } from './inference-servers';
import { optionsJson, parseDesOptions, ratio, seconds } from './options';
import { DesNoProgressError, type DesModeResult, type DesResult } from './result';
import { groupPassesStdFilter, responseLength, responseSolved } from '../../envs/draws';

/** One prompt as the DES needs it: its responses' lengths and whether its group passes the filter. */
export interface FilteredPrompt {
  lengths: number[];
  passes: boolean;
}

export interface FilteredRolloutPlan {
  /** Groups the step needs (P). */
  groupsNeeded: number;
  /** queue only: max_additional_running_prompts. */
  additionalPrompts: number;
  /** Each response its own request (prompt replication) instead of one request of k. */
  replicate: boolean;
  /** Seconds from a group's last response to its reward (and filter verdict). */
  rewardS: number;
  /** Give up (DesNoProgressError) after this many prompts. */
  maxPrompts?: number;
}

export interface FilteredRolloutSchedule {
  makespan_s: number;
  prompts_started: number;
  groups_passed: number;
  groups_filtered: number;
  /** Tokens decoded, including those of filtered and aborted groups. */
  tokens: number;
  rounds?: number;
}

function launcher(servers: SimulatedInferenceServers, plan: FilteredRolloutPlan, promptAt: (n: number) => FilteredPrompt) {
  let started = 0;
  const maxPrompts = plan.maxPrompts ?? 1000 * plan.groupsNeeded;
  return {
    get started() {
      return started;
    },
    /** Generates the next prompt's group; `onJudged(passes)` once it is generated and rewarded. */
    launch(events: EventQueue, onJudged: (passes: boolean) => void): void {
      if (started >= maxPrompts) throw new DesNoProgressError(`w3: ${started} prompts generated without ${plan.groupsNeeded} groups passing the filter`);
      const prompt = promptAt(started++);
      let left = plan.replicate ? prompt.lengths.length : 1;
      const done = () => {
        if (--left === 0) events.after(plan.rewardS, () => onJudged(prompt.passes));
      };
      if (plan.replicate) for (const length of prompt.lengths) servers.submit([length], done);
      else servers.submit(prompt.lengths, done);
    },
  };
}

export function batchRolloutSchedule(model: ServerModel, plan: FilteredRolloutPlan, promptAt: (n: number) => FilteredPrompt): FilteredRolloutSchedule {
  const events = new EventQueue();
  const servers = new SimulatedInferenceServers(events, model);
  const prompts = launcher(servers, plan, promptAt);
  let passed = 0;
  let filtered = 0;
  let rounds = 0;
  const round = () => {
    rounds++;
    let judged = 0;
    const size = plan.groupsNeeded - passed;
    for (let i = 0; i < size; i++) {
      prompts.launch(events, (passes) => {
        if (passes) passed++;
        else filtered++;
        // The filter runs on the whole batch, once every group of the round is rewarded.
        if (++judged === size && passed < plan.groupsNeeded) round();
      });
    }
  };
  round();
  const makespan = events.run();
  return { makespan_s: makespan, prompts_started: prompts.started, groups_passed: passed, groups_filtered: filtered, tokens: servers.stats().tokens, rounds };
}

export function queueRolloutSchedule(model: ServerModel, plan: FilteredRolloutPlan, promptAt: (n: number) => FilteredPrompt): FilteredRolloutSchedule {
  const events = new EventQueue();
  const servers = new SimulatedInferenceServers(events, model);
  const prompts = launcher(servers, plan, promptAt);
  let passed = 0;
  let filtered = 0;
  let inFlight = 0;
  const topUp = () => {
    while (inFlight + passed < plan.groupsNeeded + plan.additionalPrompts) {
      inFlight++;
      prompts.launch(events, (passes) => {
        inFlight--;
        if (passes) passed++;
        else filtered++;
        if (passed >= plan.groupsNeeded) events.stop(); // enough: abort what is still generating
        else topUp();
      });
    }
  };
  topUp();
  const makespan = events.run();
  return { makespan_s: makespan, prompts_started: prompts.started, groups_passed: passed, groups_filtered: filtered, tokens: servers.stats().tokens };
}

export const W3Options = z.strictObject({
  seed: z.number().int().min(0).default(1).describe('Run seed: fixes the prompts, their response lengths and rewards.'),
  prompts: z.number().int().min(1).default(8).describe('Groups the step needs after filtering (batch size P).'),
  k: z.number().int().min(1).default(8).describe('Responses per prompt.'),
  max_additional_running_prompts: z.number().int().min(0).default(16).describe('queue: extra prompts kept in flight.'),
  replicate: z.boolean().default(true).describe('Each response its own request (prompt replication), in both modes.'),
  servers: z.number().int().min(1).default(4).describe('Inference servers (K).'),
  max_batch: z.number().int().min(1).default(64).describe('Sequences one server decodes together.'),
  c0_s: z.number().min(0).default(0.01).describe('Seconds per decode step.'),
  c1_s: z.number().min(0).default(0.001).describe('Extra seconds per decode step per running sequence.'),
  mean_tokens: z.number().positive().default(1000).describe('Mean natural response length (log-normal).'),
  sigma_prompt: z.number().min(0).default(0.8).describe('Log-space std of the per-prompt length factor.'),
  sigma_sample: z.number().min(0).default(0.4).describe('Log-space std of the per-response length factor.'),
  max_tokens: z.number().int().min(1).default(4096).describe('Responses are cut at this length.'),
  p_easy: z.number().min(0).max(1).default(0.3).describe('Share of prompts every response solves (filtered).'),
  p_hard: z.number().min(0).max(1).default(0.3).describe('Share of prompts no response solves (filtered).'),
  reward_s: z.number().min(0).default(0).describe('Seconds to reward a finished group.'),
  dataset_size: z.number().int().min(1).default(4096).describe('Dataset size of the run (prompts are drawn in its seeded order).'),
  time_scale: z.number().positive().default(1).describe('Multiplies c0, c1 and reward_s.'),
});
export type W3Options = z.output<typeof W3Options>;

export function w3Prompts(o: W3Options): (n: number) => FilteredPrompt {
  const promptAt = dispatchOrder(o.dataset_size, o.seed);
  const lengthModel = { mean: o.mean_tokens, sigma_prompt: o.sigma_prompt, sigma_sample: o.sigma_sample, max: o.max_tokens };
  const solveModel = { p_easy: o.p_easy, p_hard: o.p_hard };
  return (n) => {
    const index = promptAt(n);
    const solved = Array.from({ length: o.k }, (_, j) => responseSolved(solveModel, o.seed, index, j));
    return { lengths: Array.from({ length: o.k }, (_, j) => responseLength(lengthModel, o.seed, index, j)), passes: groupPassesStdFilter(solved) };
  };
}

export function desW3(raw?: unknown): DesResult {
  const o = parseDesOptions('w3', W3Options, raw);
  if (o.p_easy + o.p_hard > 1) throw new RangeError(`w3: p_easy + p_hard = ${o.p_easy + o.p_hard} exceeds 1`);
  const model: ServerModel = { servers: o.servers, max_batch: o.max_batch, c0_s: o.c0_s * o.time_scale, c1_s: o.c1_s * o.time_scale };
  const prompts = w3Prompts(o);
  const plan = (additionalPrompts: number): FilteredRolloutPlan => ({ groupsNeeded: o.prompts, additionalPrompts, replicate: o.replicate, rewardS: o.reward_s * o.time_scale });
  const report = (s: FilteredRolloutSchedule): DesModeResult => ({ ...s, makespan_s: seconds(s.makespan_s) });
  const batch = report(batchRolloutSchedule(model, plan(0), prompts));
  const queue = report(queueRolloutSchedule(model, plan(o.max_additional_running_prompts), prompts));
  const queueNoExtra = report(queueRolloutSchedule(model, plan(0), prompts));
  return {
    workload: 'w3',
    seed: o.seed,
    options: optionsJson(o),
    baseline: 'batch',
    rollflow: 'queue',
    modes: { batch, queue, queue_no_additional: queueNoExtra },
    speedup: ratio(batch.makespan_s / queue.makespan_s),
  };
}

/** Fig. 7's configurations: batch size × 8. */
export const W3_BATCHES = [8, 16, 32, 64];

export function desW3Sweep(raw?: { [key: string]: unknown }): DesResult[] {
  return W3_BATCHES.map((prompts) => desW3({ ...raw, prompts }));
}
