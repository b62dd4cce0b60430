/**
 * The run's totals: what it counted since it started, carried across
 * continue-as-new and a resume, reported by the status query and the step
 * records; and the failing-groups stop, which reads them.
 */
import { summarizeBatch, type Batch, type GroupResult, type StepEvents } from './run-buffer';

/** The run's totals, all in one record: carried across continue-as-new and reported by the status query. */
export interface RunTotals {
  dispatchedGroups: number;
  /** Samples taken into a batch (counted when the batch is taken). */
  consumedSamples: number;
  /** Samples whose train step completed: the denominator of the staleness and partial means below. */
  trainedSamples: number;
  filteredGroups: number;
  droppedSamples: number;
  restartedSamples: number;
  staleAcceptedSamples: number;
  duplicateResults: number;
  /** Groups that failed for another reason than the infrastructure (a bad config, an env or tokenization error). */
  failedGroups: number;
  /** Groups that failed because the infrastructure did (engine or env down past retries, env lost with drop, a timeout), and their samples. */
  infraFailedGroups: number;
  infraFailedSamples: number;
  /** Samples of failed groups (among failedGroups) that had a response no verifier could score (an LLM judge's unreadable grade). */
  unscoredSamples: number;
  /** Env sessions rebuilt by replay, and episodes started over, in the groups reported (on_env_loss). */
  envReplays: number;
  envRestarts: number;
  /** Dispatch staleness (Batch.staleness) summed over trained samples, and its maximum. */
  stalenessSum: number;
  stalenessMax: number;
  partialSamples: number;
  maxPartialSpan: number;
  /** The reward mean of the batch the latest step trained. */
  lastRewardMean: number;
  /** Most samples ever buffered, training or running right after a dispatch: admission control's bound, as recorded. */
  peakSamplesInSystem: number;
}

export const emptyTotals = (): RunTotals => ({
  dispatchedGroups: 0, consumedSamples: 0, trainedSamples: 0, filteredGroups: 0, droppedSamples: 0, restartedSamples: 0, staleAcceptedSamples: 0,
  duplicateResults: 0, failedGroups: 0, infraFailedGroups: 0, infraFailedSamples: 0, unscoredSamples: 0, envReplays: 0, envRestarts: 0, stalenessSum: 0, stalenessMax: 0, partialSamples: 0, maxPartialSpan: 0, lastRewardMean: 0, peakSamplesInSystem: 0,
});

/** Groups that failed, whatever the cause (the benches' failed-group counts). */
export const allFailedGroups = (t: Pick<RunTotals, 'failedGroups' | 'infraFailedGroups'>): number => t.failedGroups + (t.infraFailedGroups ?? 0);

/** A group's env sessions rebuilt by replay and episodes started over (on_env_loss), into the totals and the step's events. */
export function countEnvEvents(t: RunTotals, events: StepEvents, result: GroupResult): void {
  const replays = result.envReplays ?? 0;
  const restarts = result.envRestarts ?? 0;
  t.envReplays += replays;
  t.envRestarts += restarts;
  events.envReplays += replays;
  events.envRestarts += restarts;
}

/** A group that failed (result.error): for the infrastructure or for another reason, and its unscored samples. */
export function countFailedGroup(t: RunTotals, events: StepEvents, result: GroupResult): void {
  if (result.infra) {
    t.infraFailedGroups++;
    t.infraFailedSamples += result.samples;
    events.infraFailedSamples += result.samples;
  } else t.failedGroups++;
  if (result.unscored) {
    t.unscoredSamples += result.samples;
    events.unscoredSamples += result.samples;
  }
}

/** A batch whose train step completed joins the totals. */
export function countTrainedBatch(t: RunTotals, batch: Batch): void {
  const b = summarizeBatch(batch);
  t.trainedSamples += b.samples;
  t.stalenessSum += batch.staleness.mean * b.samples;
  t.stalenessMax = Math.max(t.stalenessMax, batch.staleness.max);
  t.partialSamples += b.partialSamples;
  t.maxPartialSpan = Math.max(t.maxPartialSpan, b.maxSpan);
  t.lastRewardMean = b.rewardMean;
}

/** Dispatch staleness and partial rollout over the samples trained so far (the status query's means). */
export const trainedMeans = (t: RunTotals) => ({
  staleness: { mean: t.trainedSamples ? t.stalenessSum / t.trainedSamples : 0, max: t.stalenessMax },
  partial: { ratio: t.trainedSamples ? t.partialSamples / t.trainedSamples : 0, maxSpan: t.maxPartialSpan },
});

/**
 * The failing-groups stop (max_failed_group_ratio): at least 4 groups
 * failed and they are `ratio` of those dispatched. Infrastructure failures
 * count too: a group fails for the infrastructure only after its calls
 * waited out their retries (an engine or env server down for minutes) or
 * the operator chose on_env_loss: drop, and a run that keeps losing groups
 * to a dead server would otherwise skip prompt after prompt without
 * training. The message keeps the two kinds apart.
 */
export function failingBadly(t: RunTotals, ratio: number): boolean {
  const failed = allFailedGroups(t);
  return failed >= 4 && failed >= ratio * t.dispatchedGroups;
}

export function failingSummary(t: RunTotals): string {
  return `${allFailedGroups(t)} of ${t.dispatchedGroups} groups failed (${t.infraFailedGroups} for infrastructure reasons, ${t.failedGroups} for others)`;
}
