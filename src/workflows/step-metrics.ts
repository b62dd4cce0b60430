/**
 * What the run records: the builders of each record of the run's
 * metrics.jsonl and validation.jsonl (their keys are src/core/metrics.ts),
 * and the clocks behind the idle ratios. Pure: the run workflow owns
 * the times and passes them in.
 */
import { envInfoMetrics, sumEnvInfo } from './env-info';
import { type RunTotals } from './run-totals';
import { summarizeBatch, type Batch } from './run-buffer';
import type { ValidationResult } from './validate';
import { METRIC, RUN_COUNT, TRAINER_PREFIX, VAL_METRIC, type MetricKey } from '../core';

export function runCounts(view: { buffered: number; running: number; totals: Pick<RunTotals, 'dispatchedGroups' | 'filteredGroups' | 'failedGroups' | 'infraFailedGroups' | 'droppedSamples' | 'trainedSamples'> }): Record<(typeof RUN_COUNT)[keyof typeof RUN_COUNT], number> {
  const t = view.totals;
  return {
    [RUN_COUNT.buffered]: view.buffered,
    [RUN_COUNT.inFlight]: view.running,
    [RUN_COUNT.dispatchedGroups]: t.dispatchedGroups,
    [RUN_COUNT.filteredGroups]: t.filteredGroups,
    [RUN_COUNT.failedGroups]: t.failedGroups,
    [RUN_COUNT.infraFailedGroups]: t.infraFailedGroups,
    [RUN_COUNT.droppedSamples]: t.droppedSamples,
    [RUN_COUNT.trainedSamples]: t.trainedSamples,
  };
}

interface RecordHead {
  run_id: string;
  step: number;
  version: number;
  /** Seconds since the run's first execution started (the x axis of learning curves). */
  wall_s: number;
}

/** A step's record: the run's metrics and, under train/, the trainer's. */
export type StepRecord = RecordHead & Record<MetricKey, number> & Record<string, number | string>;

/** When the step's phases ended (epoch ms): the previous step, the batch ready, the train step, the weight sync. */
export interface StepTimes {
  lastStepEnd: number;
  batchAt: number;
  trainedAt: number;
  now: number;
  /** Of the step's time, how long no trajectory was running. */
  rolloutIdleMs: number;
}

export function stepRecord(head: RecordHead, batch: Batch, t: StepTimes, trained: { metrics: Record<string, number> }, syncAborted: number): StepRecord {
  const b = summarizeBatch(batch);
  const stepMs = Math.max(1, t.now - t.lastStepEnd);
  const record: StepRecord = {
    ...head,
    [METRIC.samples]: b.samples,
    [METRIC.tokens]: b.tokens,
    [METRIC.rewardMean]: b.rewardMean,
    [METRIC.stalenessMean]: batch.staleness.mean,
    [METRIC.stalenessMax]: batch.staleness.max,
    [METRIC.partialRatio]: b.partialSamples / b.samples,
    [METRIC.partialMaxSpan]: b.maxSpan,
    [METRIC.waitBatch]: (t.batchAt - t.lastStepEnd) / 1000,
    [METRIC.train]: (t.trainedAt - t.batchAt) / 1000,
    [METRIC.syncWeights]: (t.now - t.trainedAt) / 1000,
    [METRIC.trainerIdle]: (t.batchAt - t.lastStepEnd) / stepMs,
    [METRIC.rolloutIdle]: t.rolloutIdleMs / stepMs,
    [METRIC.syncAborted]: syncAborted,
    [METRIC.infraFailed]: batch.events.infraFailedSamples,
    [METRIC.envReplayed]: batch.events.envReplays,
    [METRIC.envRestarted]: batch.events.envRestarts,
    [METRIC.rewardUnscored]: batch.events.unscoredSamples,
  };
  Object.assign(record, envInfoMetrics(sumEnvInfo(batch.groups.map((g) => g.envInfo))));
  for (const [k, v] of Object.entries(trained.metrics)) record[`${TRAINER_PREFIX}${k}`] = v;
  return record;
}

export function validationRecord(head: RecordHead, result: ValidationResult): RecordHead & Record<string, number | string> {
  return {
    ...head,
    [VAL_METRIC.rewardMean]: result.rewardMean,
    [VAL_METRIC.samples]: result.samples,
    [VAL_METRIC.failedGroups]: result.failedGroups,
    ...Object.fromEntries(Object.entries(result.byTag).map(([tag, t]) => [VAL_METRIC.tagRewardMean(tag), t.rewardMean])),
  };
}

/**
 * Rollout idle time (verl's rollouter/idle_ratio): the stretches with no
 * trajectory running. note() after anything that changes what runs;
 * take() ends a step's interval and starts the next.
 */
export class RolloutIdleClock {
  private idleMs = 0;
  private idleSince: number | undefined;

  constructor(now: number) {
    this.idleSince = now;
  }

  note(running: number, now: number): void {
    if (running > 0 && this.idleSince !== undefined) {
      this.idleMs += now - this.idleSince;
      this.idleSince = undefined;
    } else if (running === 0 && this.idleSince === undefined) this.idleSince = now;
  }

  /** Idle ms since the last take (or construction), and a fresh interval from `now`. */
  take(now: number): number {
    const idle = this.idleMs + (this.idleSince === undefined ? 0 : now - this.idleSince);
    this.idleMs = 0;
    if (this.idleSince !== undefined) this.idleSince = now;
    return idle;
  }
}
