// The mapping from the run's records to Prometheus metrics (monitoring/run-metrics.ts),
// on hand-made records: each gauge holds the latest step's value of its key, each
// counter adds the steps' counts, validation records set their own gauges, runs
// stay apart by run_id, and a missing or non-numeric value changes nothing.
import { describe, expect, it } from 'vitest';
import { observeRecord, registry } from '../../src/monitoring/run-metrics';
import { METRIC, RUN_COUNT, TRAINER_PREFIX, VAL_METRIC } from '../../src/core';

/** The value of `name` for `runId`, as a scrape would show it (undefined: no series). */
async function value(name: string, runId: string): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name} in the registry`);
  return (await metric.get()).values.find((v) => v.labels.run_id === runId)?.value;
}

/** Every run series on the page: `name{run_id}` -> value. */
async function runSeries(runId: string): Promise<Map<string, number>> {
  const all = await registry.getMetricsAsJSON();
  return new Map(all.flatMap((m) => m.values.filter((v) => v.labels.run_id === runId).map((v) => [m.name, v.value] as [string, number])));
}

const stepRecord = (runId: string, step: number, counts: number) => ({
  run_id: runId,
  step,
  version: step + 1,
  wall_s: 12.5,
  [METRIC.samples]: 16,
  [METRIC.tokens]: 900,
  [METRIC.rewardMean]: 0.4375,
  [METRIC.stalenessMean]: 0.5,
  [METRIC.stalenessMax]: 2,
  [`${TRAINER_PREFIX}staleness/oldest_token_mean`]: 0.75,
  [`${TRAINER_PREFIX}staleness/oldest_token_max`]: 3,
  [`${TRAINER_PREFIX}losses/total`]: 1.25, // not exported: the trainer's other keys stay in metrics.jsonl
  [METRIC.partialRatio]: 0.125,
  [METRIC.trainerIdle]: 0.3,
  [METRIC.rolloutIdle]: 0.05,
  [METRIC.infraFailed]: counts,
  [METRIC.rewardUnscored]: 2 * counts,
  [METRIC.envReplayed]: 3 * counts,
  [METRIC.envRestarted]: 4 * counts,
  [METRIC.syncAborted]: 5 * counts,
  [RUN_COUNT.buffered]: 8,
  [RUN_COUNT.inFlight]: 24,
  [RUN_COUNT.dispatchedGroups]: 10 + step,
  [RUN_COUNT.filteredGroups]: 1,
  [RUN_COUNT.failedGroups]: 2,
  [RUN_COUNT.infraFailedGroups]: 3,
  [RUN_COUNT.droppedSamples]: 4,
  [RUN_COUNT.trainedSamples]: 16 * (step + 1),
});

describe('run metrics from the run\'s records', () => {
  it('a step record sets each gauge to its key\'s value (step: steps trained) and adds its counts to the counters', async () => {
    observeRecord('metrics.jsonl', stepRecord('r-step', 0, 1));
    observeRecord('metrics.jsonl', stepRecord('r-step', 1, 2));
    expect(Object.fromEntries(await runSeries('r-step'))).toEqual({
      rollflow_run_step: 2,
      rollflow_run_version: 2,
      rollflow_run_reward_mean: 0.4375,
      rollflow_run_batch_samples: 16,
      rollflow_run_staleness_dispatch_mean: 0.5,
      rollflow_run_staleness_dispatch_max: 2,
      rollflow_run_staleness_oldest_token_mean: 0.75,
      rollflow_run_staleness_oldest_token_max: 3,
      rollflow_run_partial_ratio: 0.125,
      rollflow_run_idle_trainer_ratio: 0.3,
      rollflow_run_idle_rollout_ratio: 0.05,
      rollflow_run_buffered_samples: 8,
      rollflow_run_in_flight_samples: 24,
      rollflow_run_dispatched_groups: 11,
      rollflow_run_filtered_groups: 1,
      rollflow_run_failed_groups: 2,
      rollflow_run_infra_failed_groups: 3,
      rollflow_run_dropped_samples: 4,
      rollflow_run_trained_samples: 32,
      // counters: the two records' counts added (1 + 2 = 3; the others 2, 3, 4 and 5 times that)
      rollflow_run_infra_failed_samples_total: 3,
      rollflow_run_reward_unscored_samples_total: 6,
      rollflow_run_env_replayed_total: 9,
      rollflow_run_env_restarted_total: 12,
      rollflow_run_sync_aborted_requests_total: 15,
    });
  });

  it('every run count the step records carry (RUN_COUNT) is exported', async () => {
    const counts = Object.fromEntries(Object.values(RUN_COUNT).map((key, i) => [key, 100 + i]));
    observeRecord('metrics.jsonl', { run_id: 'r-counts', step: 0, ...counts });
    const values = [...(await runSeries('r-counts')).values()];
    for (const v of Object.values(counts)) expect(values, `the value of ${Object.keys(counts).find((k) => counts[k] === v)}`).toContain(v);
  });

  it('a validation record sets the validation gauges and leaves the step\'s alone', async () => {
    observeRecord('metrics.jsonl', stepRecord('r-val', 4, 0));
    observeRecord('validation.jsonl', { run_id: 'r-val', step: 5, version: 5, wall_s: 30, [VAL_METRIC.rewardMean]: 0.8125, [VAL_METRIC.samples]: 8 });
    expect(await value('rollflow_run_validation_reward_mean', 'r-val')).toBe(0.8125);
    expect(await value('rollflow_run_validation_step', 'r-val')).toBe(5);
    expect(await value('rollflow_run_step', 'r-val')).toBe(5);
    expect(await value('rollflow_run_reward_mean', 'r-val')).toBe(0.4375);
  });

  it('a record seen again (a retried appendMetrics) sets the gauges and adds no counts', async () => {
    observeRecord('metrics.jsonl', stepRecord('r-retry', 0, 1));
    observeRecord('metrics.jsonl', stepRecord('r-retry', 0, 1), { counters: false });
    expect(await value('rollflow_run_infra_failed_samples_total', 'r-retry')).toBe(1);
    // On a worker that had not seen it (the writer died): the gauges, and no counter series at all.
    observeRecord('metrics.jsonl', stepRecord('r-other-worker', 3, 1), { counters: false });
    expect(await value('rollflow_run_step', 'r-other-worker')).toBe(4);
    expect(await value('rollflow_run_infra_failed_samples_total', 'r-other-worker')).toBeUndefined();
  });

  it('keeps runs apart by run_id', async () => {
    observeRecord('metrics.jsonl', { ...stepRecord('r-a', 0, 1), [METRIC.rewardMean]: 0.25 });
    observeRecord('metrics.jsonl', { ...stepRecord('r-b', 6, 1), [METRIC.rewardMean]: 0.75 });
    expect([await value('rollflow_run_reward_mean', 'r-a'), await value('rollflow_run_reward_mean', 'r-b')]).toEqual([0.25, 0.75]);
    expect([await value('rollflow_run_step', 'r-a'), await value('rollflow_run_step', 'r-b')]).toEqual([1, 7]);
    expect(await value('rollflow_run_infra_failed_samples_total', 'r-a')).toBe(1);
  });

  it('a missing or non-numeric value leaves its gauge as it was; a count of 0 shows the counter at 0', async () => {
    observeRecord('metrics.jsonl', stepRecord('r-gaps', 0, 0));
    const noReward: Record<string, unknown> & { run_id: string; step: number } = stepRecord('r-gaps', 1, 0);
    delete noReward[METRIC.rewardMean];
    observeRecord('metrics.jsonl', { ...noReward, [METRIC.stalenessMax]: Number.NaN, [METRIC.trainerIdle]: 'n/a', [METRIC.infraFailed]: -1 });
    expect(await value('rollflow_run_step', 'r-gaps')).toBe(2);
    expect(await value('rollflow_run_reward_mean', 'r-gaps')).toBe(0.4375);
    expect(await value('rollflow_run_staleness_dispatch_max', 'r-gaps')).toBe(2);
    expect(await value('rollflow_run_idle_trainer_ratio', 'r-gaps')).toBe(0.3);
    expect(await value('rollflow_run_infra_failed_samples_total', 'r-gaps')).toBe(0);
    expect(await registry.metrics()).not.toMatch(/NaN/);
  });
});
