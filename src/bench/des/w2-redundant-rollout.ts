/**
 * W2: redundant env rollout (ROLL Flash Sec. 5.2.2, Fig. 10). Env groups run
 * env-async; a step may be fail-slow (k× longer) or fail-stop (never answers:
 * it holds its trajectory for `timeout_s`, then the trajectory fails, which
 * fails its group, and a fresh group — the next dispatch position — takes the
 * freed slot, as the run workflow does with a failed group's capacity).
 * Rollout ends as soon as enough complete groups hold the batch; running
 * groups are cancelled (or carried over), which costs the step nothing.
 * More slots than needed (num_env_groups) or fewer groups needed (larger
 * group_size) is what absorbs the stragglers.
 */
import { z } from 'zod';
import { dispatchOrder } from './dispatch-order';
import { episodeLatencies, episodeSeed } from './env-latencies';
import { EventQueue } from './event-queue';
import { optionsJson, parseDesOptions, ratio, seconds } from './options';
import { DesNoProgressError, type DesModeResult, type DesResult } from './result';

/** How one trajectory or group ends, in seconds from its start. */
export interface Outcome {
  seconds: number;
  failed: boolean;
}

/** A trajectory ends after all its turns, or `timeoutS` into its first fail-stop (Infinity) step. */
export function trajectoryOutcome(llm: readonly number[], env: readonly number[], timeoutS: number): Outcome {
  let t = 0;
  for (let turn = 0; turn < env.length; turn++) {
    t += llm[turn] ?? 0;
    const step = env[turn]!;
    if (step === Infinity) return { seconds: t + timeoutS, failed: true };
    t += step;
  }
  return { seconds: t, failed: false };
}

/** A group completes when its last member does, and fails when its first member fails (the group awaits all members). */
export function groupOutcome(members: readonly Outcome[]): Outcome {
  const failures = members.filter((m) => m.failed);
  if (failures.length > 0) return { seconds: Math.min(...failures.map((m) => m.seconds)), failed: true };
  return { seconds: Math.max(0, ...members.map((m) => m.seconds)), failed: false };
}

export interface RedundantRolloutPlan {
  /** Groups running at once (num_env_groups). */
  slots: number;
  groupSize: number;
  /** Trajectories the step needs, in complete groups: ⌈needed / groupSize⌉ groups. */
  neededTrajectories: number;
  /** Give up (DesNoProgressError) after this many group starts. */
  maxGroupStarts?: number;
}

export interface RedundantRolloutSchedule {
  makespan_s: number;
  groups_needed: number;
  groups_started: number;
  groups_failed: number;
  /** Groups still running when the step had enough (cancelled or carried over). */
  groups_running_at_end: number;
}

/** Schedules groups 0, 1, 2, … (dispatch order) on the slots; `outcomeOf(n)` is how group n ends. */
export function redundantRolloutSchedule(plan: RedundantRolloutPlan, outcomeOf: (group: number) => Outcome): RedundantRolloutSchedule {
  const groupsNeeded = Math.ceil(plan.neededTrajectories / plan.groupSize);
  if (groupsNeeded > plan.slots) throw new RangeError(`${plan.slots} groups of ${plan.groupSize} cannot hold ${plan.neededTrajectories} trajectories`);
  const maxStarts = plan.maxGroupStarts ?? 100 * plan.slots;
  const events = new EventQueue();
  let started = 0;
  let failed = 0;
  let collected = 0;
  let running = 0;
  const start = () => {
    if (started >= maxStarts) throw new DesNoProgressError(`w2: ${started} groups started and only ${collected} of ${groupsNeeded} completed (is every env failing?)`);
    const outcome = outcomeOf(started++);
    running++;
    events.after(outcome.seconds, () => {
      running--;
      if (outcome.failed) {
        failed++;
        start(); // the failed group's capacity goes to the next prompt
      } else if (++collected === groupsNeeded) events.stop();
    });
  };
  for (let slot = 0; slot < plan.slots; slot++) start();
  const makespan = events.run();
  return { makespan_s: makespan, groups_needed: groupsNeeded, groups_started: started, groups_failed: failed, groups_running_at_end: running };
}

export const W2Options = z.strictObject({
  seed: z.number().int().min(0).default(1).describe('Run seed: fixes which env seeds (dataset indices) the groups get.'),
  batch: z.number().int().min(1).default(256).describe('Trajectories the step needs, collected in complete groups.'),
  baseline_env_groups: z.number().int().min(1).default(32).describe('Baseline: exactly batch = groups × size.'),
  baseline_group_size: z.number().int().min(1).default(8).describe('Baseline group size.'),
  num_env_groups: z.number().int().min(1).default(36).describe('Redundant rollout: env groups running at once.'),
  group_size: z.number().int().min(1).default(12).describe('Redundant rollout: trajectories per group.'),
  turns: z.number().int().min(1).default(22).describe('Turns per trajectory (T).'),
  mean_s: z.number().min(0).default(10).describe('Mean env step latency (μ), seconds.'),
  std_s: z.number().min(0).default(5).describe('Env step latency standard deviation (σ), truncated at 0.'),
  p_slow: z.number().min(0).max(1).default(0.05).describe('Probability a step is fail-slow.'),
  slow_factor: z.number().min(1).default(5).describe('How many times longer a fail-slow step takes.'),
  p_stop: z.number().min(0).max(1).default(0.01).describe('Probability a step never answers (fail-stop).'),
  timeout_s: z.number().min(0).default(600).describe('Seconds a fail-stop step holds its trajectory before it is given up (step timeout × attempts).'),
  llm_s: z.number().min(0).default(0).describe('Generation seconds per turn (0: negligible).'),
  dataset_size: z.number().int().min(1).default(4096).describe('Dataset size of the run (env seeds are dataset indices).'),
  latency_keying: z.enum(['shared', 'independent']).default('shared').describe('shared: members of a group draw the same latencies, as the real env does today.'),
  time_scale: z.number().positive().default(1).describe('Multiplies every latency and the timeout.'),
});
export type W2Options = z.output<typeof W2Options>;

export function desW2(raw?: unknown): DesResult {
  const o = parseDesOptions('w2', W2Options, raw);
  const model = { mean_s: o.mean_s, std_s: o.std_s, p_slow: o.p_slow, slow_factor: o.slow_factor, p_stop: o.p_stop };
  const envSeedAt = dispatchOrder(o.dataset_size, o.seed);
  const llm = new Array<number>(o.turns).fill(o.llm_s * o.time_scale);
  const outcomeOf = (groupSize: number) => (group: number) => {
    const envSeed = envSeedAt(group);
    const members = Array.from({ length: groupSize }, (_, m) => trajectoryOutcome(llm, episodeLatencies(model, episodeSeed(envSeed, m, o.latency_keying), o.turns, o.time_scale), o.timeout_s * o.time_scale));
    return groupOutcome(members);
  };
  const mode = (slots: number, groupSize: number): DesModeResult => {
    const s = redundantRolloutSchedule({ slots, groupSize, neededTrajectories: o.batch }, outcomeOf(groupSize));
    return { ...s, makespan_s: seconds(s.makespan_s), num_env_groups: slots, group_size: groupSize };
  };
  const exact = mode(o.baseline_env_groups, o.baseline_group_size);
  const redundant = mode(o.num_env_groups, o.group_size);
  return { workload: 'w2', seed: o.seed, options: optionsJson(o), baseline: 'exact', rollflow: 'redundant', modes: { exact, redundant }, speedup: ratio(exact.makespan_s / redundant.makespan_s) };
}

/** The Fig. 10 heatmap grid: num_env_groups × group_size, each against the 32 × 8 baseline. */
export const W2_GRID = { num_env_groups: [32, 36, 40, 44, 48], group_size: [8, 9, 10, 11, 12] };

export function desW2Grid(raw?: { [key: string]: unknown }): DesResult[] {
  return W2_GRID.num_env_groups.flatMap((num_env_groups) => W2_GRID.group_size.map((group_size) => desW2({ ...raw, num_env_groups, group_size })));
}
