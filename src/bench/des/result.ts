/**
 * What a discrete-event simulation (DES) reports: plain JSON, so the bench
 * command can print it, store it beside the measured run and diff it.
 */

export type Json = number | string | boolean | null | Json[] | { [key: string]: Json };

export type DesWorkload = 'w1' | 'w2' | 'w3' | 'w4' | 'w5';

/** One mode's zero-overhead schedule: its makespan and whatever explains it. */
export interface DesModeResult {
  /** Seconds from the first dispatch to the end of the work (zero orchestration overhead). */
  makespan_s: number;
  [detail: string]: Json;
}

export interface DesResult {
  workload: DesWorkload;
  /** The run seed the latencies were sampled with (print it; a run repeats from it). */
  seed: number;
  /** Every option after defaults, so the result says exactly what was simulated. */
  options: { [key: string]: Json };
  /** Mode names in `modes`: the baseline and the rollflow mode compared by `speedup`. */
  baseline: string;
  rollflow: string;
  modes: Record<string, DesModeResult>;
  /** baseline makespan / rollflow makespan (W5: both train the same samples, so also the samples/s ratio). */
  speedup: number;
}

/** Thrown when DES options fail their schema; the message names each key, the value and what was expected. */
export class DesOptionsError extends Error {
  override readonly name = 'DesOptionsError';
}

/** Thrown when a simulated workload can never finish (e.g. every env fail-stops, so no group ever completes). */
export class DesNoProgressError extends Error {
  override readonly name = 'DesNoProgressError';
}
