/**
 * lockstepRollout: the synchronous rollout baseline (`rollout_mode: lockstep`).
 * The groups the run dispatched together advance as one batch, turn by turn:
 * every live trajectory generates, then every env steps, and the next turn
 * starts only when the slowest env of the batch has answered: ROLL Flash's
 * env-level synchronous rollout (Fig. 9), against which `env_async` (each
 * trajectory its own workflow) is measured. The calls are exactly those of
 * `trajectory`; only the barriers differ.
 *
 * One workflow holds the whole batch, so it continues-as-new between turns
 * before its history grows large (B trajectories × 2 activities per turn).
 */
import { continueAsNew, workflowInfo } from '@temporalio/workflow';
import { summarizeFailure, type FailureSummary } from './failure';
import { failedGroup, reportToRun, summarize, trajectoryInputs, type GroupInput } from './group';
import type { GroupResult } from './run-buffer';
import { episodeCalls, finishEpisode, generateFor, startEpisode, stepEnv, type Episode, type TrajectorySummary } from './trajectory';

/** One trajectory's progress: its episode, or why it failed for good (its whole group then fails; `infra` absent in slots carried before it existed). */
export type Slot = { ep: Episode } | { error: string; infra?: boolean; unscored?: true };

export interface LockstepInput {
  runId: string;
  groups: GroupInput[];
  /** Carried across continue-as-new: one slot per trajectory, groups in order. */
  slots?: Slot[];
}

/** Continue-as-new past this many history events even if the server has not suggested it yet. */
const HISTORY_EVENTS_PER_RUN = 10_000;

type Settled<T> = { ok: true; value: T } | { ok: false; failure: FailureSummary };

async function settle<T>(p: Promise<T>): Promise<Settled<T>> {
  try {
    return { ok: true, value: await p };
  } catch (err) {
    return { ok: false, failure: summarizeFailure(err) };
  }
}

const failedSlot = ({ message, infra, unscored }: FailureSummary): Slot => ({ error: message, infra, ...(unscored ? { unscored } : {}) });

export async function lockstepRollout(input: LockstepInput): Promise<GroupResult[]> {
  const trajectories = input.groups.flatMap(trajectoryInputs);
  const groupOf = input.groups.flatMap((g, gi) => trajectoryInputs(g).map(() => gi));
  const calls = trajectories.map((t) => episodeCalls(t.env, 'activity', t.queues));
  const slots: Slot[] = input.slots ?? (await Promise.all(trajectories.map(async (t, i) => {
    const r = await settle(startEpisode(t, calls[i]));
    return r.ok ? { ep: r.value } : failedSlot(r.failure);
  })));
  // A failed trajectory fails its group: its siblings stop too (their group will not be trained).
  const failGroupOf = (i: number, failed: Slot) => groupOf.forEach((g, j) => g === groupOf[i] && (slots[j] = failed));
  slots.forEach((s, i) => 'error' in s && failGroupOf(i, s));

  const live = () => slots.flatMap((s, i) => ('ep' in s && !s.ep.done ? [i] : []));
  while (live().length > 0) {
    const turn = live();
    // Barrier 1: the whole batch generates.
    const actions = await Promise.all(turn.map((i) => settle(generateFor(trajectories[i]!, (slots[i] as { ep: Episode }).ep))));
    // Barrier 2: every env steps; the turn ends with the slowest.
    const steps = await Promise.all(turn.map((i, k) => {
      const a = actions[k]!;
      return a.ok ? settle(stepEnv(trajectories[i]!, (slots[i] as { ep: Episode }).ep, a.value, calls[i])) : Promise.resolve(a);
    }));
    turn.forEach((i, k) => {
      const s = steps[k]!;
      if ('ep' in slots[i]!) slots[i] = s.ok ? { ep: s.value } : failedSlot(s.failure);
      if (!s.ok) failGroupOf(i, failedSlot(s.failure));
    });
    const info = workflowInfo();
    if (live().length > 0 && (info.continueAsNewSuggested || info.historyLength > HISTORY_EVENTS_PER_RUN)) {
      return continueAsNew<typeof lockstepRollout>({ ...input, slots });
    }
  }

  const finished = await Promise.all(slots.map((s, i): Promise<Settled<TrajectorySummary>> => ('ep' in s ? settle(finishEpisode(trajectories[i]!, s.ep, calls[i])) : Promise.resolve({ ok: false, failure: { message: s.error, infra: s.infra ?? false, ...(s.unscored ? { unscored: s.unscored } : {}) } }))));
  const results = input.groups.map((g, gi) => {
    const mine = finished.filter((_, i) => groupOf[i] === gi);
    const failure = mine.find((r) => !r.ok);
    return failure && !failure.ok ? failedGroup(g, failure.failure) : summarize(g, mine.map((r) => (r as { value: TrajectorySummary }).value));
  });
  await Promise.all(results.map((r) => reportToRun(input.runId, r)));
  return results;
}
