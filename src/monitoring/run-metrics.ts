/**
 * The run's numbers as Prometheus metrics, labelled by run id: set from each
 * record the run writes (appendMetrics: a step's record, a validation's), so
 * a scrape and the run's metrics.jsonl agree by construction. Gauges hold the
 * latest step's values; counters add each step's "since the previous step"
 * counts. A worker that restarts starts its counters at 0 (Prometheus treats
 * that as a counter reset) and its gauges fill in at the next step.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { METRIC, RUN_COUNT, TRAINER_PREFIX, VAL_METRIC } from '../core';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'rollflow_worker_' });

const gauge = (name: string, help: string) => new Gauge({ name: `rollflow_run_${name}`, help, labelNames: ['run_id'] as const, registers: [registry] });
const counter = (name: string, help: string) => new Counter({ name: `rollflow_run_${name}_total`, help, labelNames: ['run_id'] as const, registers: [registry] });

/** Step-record keys shown as gauges: the latest step's value. */
const STEP_GAUGES: [key: string, gauge: Gauge<'run_id'>][] = [
  ['step', gauge('step', 'Steps trained (the step record\'s step + 1).')],
  ['version', gauge('version', 'Weights version after the latest step.')],
  [METRIC.rewardMean, gauge('reward_mean', 'Mean reward of the latest step\'s batch.')],
  [METRIC.samples, gauge('batch_samples', 'Samples in the latest step\'s batch.')],
  [METRIC.stalenessMean, gauge('staleness_dispatch_mean', 'Dispatch staleness (versions) of the latest batch, mean.')],
  [METRIC.stalenessMax, gauge('staleness_dispatch_max', 'Dispatch staleness (versions) of the latest batch, max.')],
  [`${TRAINER_PREFIX}staleness/oldest_token_mean`, gauge('staleness_oldest_token_mean', 'Staleness of each sample\'s oldest token in the latest batch, mean (the trainer\'s count).')],
  [`${TRAINER_PREFIX}staleness/oldest_token_max`, gauge('staleness_oldest_token_max', 'Staleness of each sample\'s oldest token in the latest batch, max.')],
  [METRIC.partialRatio, gauge('partial_ratio', 'Share of the latest batch\'s samples generated over more than one weights version.')],
  [METRIC.trainerIdle, gauge('idle_trainer_ratio', 'Share of the latest step the trainer waited for a batch.')],
  [METRIC.rolloutIdle, gauge('idle_rollout_ratio', 'Share of the latest step no trajectory was running.')],
  [RUN_COUNT.buffered, gauge('buffered_samples', 'Samples buffered for training as the latest step ended.')],
  [RUN_COUNT.inFlight, gauge('in_flight_samples', 'Samples being generated as the latest step ended.')],
  [RUN_COUNT.dispatchedGroups, gauge('dispatched_groups', 'Groups dispatched since the run started.')],
  [RUN_COUNT.filteredGroups, gauge('filtered_groups', 'Groups dropped by the group filter since the run started.')],
  [RUN_COUNT.failedGroups, gauge('failed_groups', 'Groups failed for a reason of their own (not the infrastructure) since the run started.')],
  [RUN_COUNT.infraFailedGroups, gauge('infra_failed_groups', 'Groups failed because the infrastructure did since the run started.')],
  [RUN_COUNT.droppedSamples, gauge('dropped_samples', 'Samples dropped as stale since the run started.')],
  [RUN_COUNT.trainedSamples, gauge('trained_samples', 'Samples trained since the run started.')],
];

/** Step-record keys counted "since the previous step": added up. */
const STEP_COUNTERS: [key: string, counter: Counter<'run_id'>][] = [
  [METRIC.infraFailed, counter('infra_failed_samples', 'Samples of groups failed for an infrastructure reason (never trained).')],
  [METRIC.rewardUnscored, counter('reward_unscored_samples', 'Samples no verifier could score (never trained).')],
  [METRIC.envReplayed, counter('env_replayed', 'Env sessions rebuilt by replaying their actions.')],
  [METRIC.envRestarted, counter('env_restarted', 'Episodes started over after their env session was lost.')],
  [METRIC.syncAborted, counter('sync_aborted_requests', 'Generation requests aborted by weight syncs.')],
];

const validationReward = gauge('validation_reward_mean', 'Mean reward of the latest validation.');
const validationStep = gauge('validation_step', 'Steps trained when the latest validation ran.');

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/**
 * One record the run wrote: its step log's (metrics.jsonl) or its validation log's (validation.jsonl).
 * `counters: false` for a record written before (a retried appendMetrics, perhaps on another worker than the one
 * that wrote it): its gauges are set again, which changes nothing where they were set, and its counts are not added twice.
 */
export function observeRecord(file: 'metrics.jsonl' | 'validation.jsonl', record: { run_id: string; step: number } & Record<string, unknown>, { counters = true } = {}): void {
  const labels = { run_id: record.run_id };
  if (file === 'validation.jsonl') {
    const reward = num(record[VAL_METRIC.rewardMean]);
    if (reward !== undefined) validationReward.set(labels, reward);
    validationStep.set(labels, record.step);
    return;
  }
  for (const [key, g] of STEP_GAUGES) {
    // The record's step is the step trained (0-based); the gauge counts steps done, as the run's status does.
    const v = key === 'step' ? record.step + 1 : num(record[key]);
    if (v !== undefined) g.set(labels, v);
  }
  for (const [key, c] of counters ? STEP_COUNTERS : []) {
    const v = num(record[key]);
    // (An increment of 0 still creates the run's series, so a dashboard shows 0, not "no data".)
    if (v !== undefined && v >= 0) c.inc(labels, v);
  }
}
