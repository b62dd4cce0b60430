/**
 * The run's memo: its latest step's reward and its latest validation reward,
 * upserted after each step, so that Temporal's visibility returns them with
 * every listed run (`rollflow list`, RollflowClient.list) without a query,
 * hence without a worker, and after the run has closed. The keys are the
 * metrics.jsonl and validation.jsonl names.
 */
import { METRIC, VAL_METRIC } from '../core';

// A type, not an interface: upsertMemo takes a Record, which an interface is not.
export type RunMemo = {
  [METRIC.rewardMean]: number;
  [VAL_METRIC.rewardMean]?: number;
};

export function runMemo(reward: number, lastValidation: { rewardMean: number } | undefined): RunMemo {
  return { [METRIC.rewardMean]: reward, ...(lastValidation ? { [VAL_METRIC.rewardMean]: lastValidation.rewardMean } : {}) };
}

/** The rewards of a listed run's memo; none for a run that has not trained a step (or started before the memo existed). */
export function rewardsOfMemo(memo: Record<string, unknown> | undefined): { reward?: number; valReward?: number } {
  const number = (v: unknown) => (typeof v === 'number' ? v : undefined);
  const reward = number(memo?.[METRIC.rewardMean]);
  const valReward = number(memo?.[VAL_METRIC.rewardMean]);
  return { ...(reward !== undefined ? { reward } : {}), ...(valReward !== undefined ? { valReward } : {}) };
}
