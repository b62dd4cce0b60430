/**
 * The arithmetic of a benchmark report, on what runs record in
 * metrics.jsonl (src/workflows/run.ts): pure functions, unit-tested.
 *
 * - rollout makespan of a one-step run = step 0's timing/wait_batch: from the
 *   run workflow's first dispatch (right after the initial weight sync) to
 *   the moment the last group's result made the batch ready. It includes
 *   starting the workflows, env reset, every generate and env step, writing
 *   the samples and the groups' signals; the DES counts only the turns.
 * - overhead = measured makespan / DES makespan − 1 (bench/README.md).
 * - a multi-step run's makespan = Σ over steps of wait_batch + train +
 *   sync_weights: from the first dispatch to the end of the last weight sync.
 */

import { METRIC, type MetricKey, parseSampleUid } from '../../core';

export type Metrics = Record<string, number | string>;

const num = (m: Metrics, key: MetricKey): number => {
  const v = m[key];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new RangeError(`metrics of step ${String(m.step)} have no number ${key}`);
  return v;
};

const round = (x: number, digits = 4) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Rollout time of a one-step run: step 0's timing/wait_batch, seconds. */
export function rolloutMakespan(metrics: readonly Metrics[]): number {
  const first = metrics.find((m) => m.step === 0);
  if (!first) throw new RangeError('no metrics for step 0 (the run did not finish its first step)');
  return num(first, METRIC.waitBatch);
}

export const speedup = (baselineS: number, rollflowS: number): number => round(baselineS / rollflowS);

/** measured / DES − 1: the share of the zero-overhead makespan that orchestration added. */
export const overhead = (measuredS: number, desS: number): number => round(measuredS / desS - 1);

/** A mode's measured makespan (null when it did not run or failed) and its DES makespan. */
export interface ModeMakespans {
  measuredS: number | null;
  desS: number;
}

/** Baseline against rollflow, as every workload reports it: both makespans, both speedups and both overheads. */
export function versus(base: ModeMakespans, flash: ModeMakespans) {
  const measured = base.measuredS !== null && flash.measuredS !== null ? speedup(base.measuredS, flash.measuredS) : null;
  const desSpeedup = speedup(base.desS, flash.desS);
  return {
    baseline_makespan_s: base.measuredS,
    rollflow_makespan_s: flash.measuredS,
    measured_speedup: measured,
    des_speedup: desSpeedup,
    /** measured speedup / DES speedup − 1. */
    speedup_vs_des: measured !== null ? overhead(measured, desSpeedup) : null,
    des_baseline_makespan_s: base.desS,
    des_rollflow_makespan_s: flash.desS,
    overhead: flash.measuredS !== null ? overhead(flash.measuredS, flash.desS) : null,
    baseline_overhead: base.measuredS !== null ? overhead(base.measuredS, base.desS) : null,
  };
}

/** One mode's run beside its DES makespan: the measured makespan of step 0 and the overhead. */
export function modeMakespan(run: { ok: boolean; metrics: readonly Metrics[] } | undefined, desS: number) {
  const measured = run?.ok ? rolloutMakespan(run.metrics) : null;
  return { makespan_s: measured, des_makespan_s: desS, overhead: measured !== null ? overhead(measured, desS) : null };
}

/** Activities of one trajectory of T turns: env reset, T × (generate, env step), finish (write the sample). */
export const activitiesPerTrajectory = (turns: number): number => 2 * turns + 2;

export interface StepsSummary {
  steps: number;
  samples: number;
  makespan_s: number;
  samples_per_s: number;
  /** Share of the makespan the trainer waited for a batch (Σ wait_batch / makespan). */
  trainer_idle_ratio: number;
  /** Share of the makespan with no trajectory running (Σ idle/rollout × step time / makespan). */
  rollout_idle_ratio: number;
  /** Time in weight syncs, which the DES takes as zero. */
  sync_s: number;
  staleness_max: number;
}

/** Totals of a multi-step run from its per-step records: each idle ratio is weighted by its step's duration. */
export function summarizeSteps(metrics: readonly Metrics[]): StepsSummary {
  if (metrics.length === 0) throw new RangeError('no step metrics');
  let makespan = 0;
  let wait = 0;
  let rolloutIdle = 0;
  let sync = 0;
  let samples = 0;
  let stalenessMax = 0;
  for (const m of metrics) {
    const stepS = num(m, METRIC.waitBatch) + num(m, METRIC.train) + num(m, METRIC.syncWeights);
    makespan += stepS;
    wait += num(m, METRIC.waitBatch);
    sync += num(m, METRIC.syncWeights);
    rolloutIdle += num(m, METRIC.rolloutIdle) * stepS;
    samples += num(m, METRIC.samples);
    stalenessMax = Math.max(stalenessMax, num(m, METRIC.stalenessMax));
  }
  return {
    steps: metrics.length,
    samples,
    makespan_s: round(makespan, 3),
    samples_per_s: round(samples / makespan),
    trainer_idle_ratio: round(wait / makespan),
    rollout_idle_ratio: round(rolloutIdle / makespan),
    sync_s: round(sync, 3),
    staleness_max: stalenessMax,
  };
}

/** A sample uid → the dispatch index of its group (epoch · dataset size + position) and its member. */
export function dispatchIndex(uid: string, datasetSize: number): { group: number; member: number } {
  const s = parseSampleUid(uid);
  return { group: s.epoch * datasetSize + s.position, member: s.member };
}

export interface DispatchRamp {
  requests: number;
  /** Seconds from the first generate request to the median one and to the last one. */
  p50_s: number;
  last_s: number;
}

/** How a run's generate requests were spread in time (the DES sends them all at once). */
export function dispatchRamp(scheduledAtMs: readonly number[]): DispatchRamp | null {
  if (scheduledAtMs.length === 0) return null;
  const t = [...scheduledAtMs].sort((a, b) => a - b);
  const at = (i: number) => round((t[i]! - t[0]!) / 1000, 3);
  return { requests: t.length, p50_s: at(Math.floor((t.length - 1) / 2)), last_s: at(t.length - 1) };
}
