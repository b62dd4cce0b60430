/**
 * The arithmetic of a benchmark report, on what runs record in
 * metrics.jsonl (src/workflows/run.ts): pure functions, unit-tested.
 *
 * - rollout makespan of a one-step run = step 0's timing/wait_batch: from the
 *   run workflow's first dispatch (right after the initial weight sync) to
 *   the moment the last group's result made the batch ready. It includes
 *   starting the workflows, env reset, every generate and env step, writing
 *   the samples and the groups' signals; the DES counts only the turns.
 * - overhead = measured makespan / DES makespan − 1 (BENCHMARKS.md).
 * - a multi-step run's makespan = Σ over steps of wait_batch + train +
 *   sync_weights: from the first dispatch to the end of the last weight sync.
 */

export type Metrics = Record<string, number | string>;

const num = (m: Metrics, key: string): number => {
  const v = m[key];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new RangeError(`metrics of step ${String(m.step)} have no number ${key}`);
  return v;
};

const round = (x: number, digits = 4) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Rollout time of a one-step run: step 0's timing/wait_batch, seconds. */
export function rolloutMakespan(metrics: readonly Metrics[]): number {
  const first = metrics.find((m) => m.step === 0);
  if (!first) throw new RangeError('no metrics for step 0 (the run did not finish its first step)');
  return num(first, 'timing/wait_batch');
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

export interface RunTotals {
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
export function runTotals(metrics: readonly Metrics[]): RunTotals {
  if (metrics.length === 0) throw new RangeError('no step metrics');
  let makespan = 0;
  let wait = 0;
  let rolloutIdle = 0;
  let sync = 0;
  let samples = 0;
  let stalenessMax = 0;
  for (const m of metrics) {
    const stepS = num(m, 'timing/wait_batch') + num(m, 'timing/train') + num(m, 'timing/sync_weights');
    makespan += stepS;
    wait += num(m, 'timing/wait_batch');
    sync += num(m, 'timing/sync_weights');
    rolloutIdle += num(m, 'idle/rollout') * stepS;
    samples += num(m, 'rollout/samples');
    stalenessMax = Math.max(stalenessMax, num(m, 'staleness/max'));
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

/** "e<epoch>-p<position>-s<member>" (run-state groupUid + the trajectory's member) → its dispatch index and member. */
export function parseSampleUid(uid: string, datasetSize: number): { group: number; member: number } {
  const m = /^e(\d+)-p(\d+)-s(\d+)$/.exec(uid);
  if (!m) throw new RangeError(`not a sample uid: ${uid}`);
  return { group: Number(m[1]) * datasetSize + Number(m[2]), member: Number(m[3]) };
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
