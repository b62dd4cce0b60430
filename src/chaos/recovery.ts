/**
 * Figures from the metrics records' wall_s (seconds since the run started
 * at each step's end). A step's interval is wall_s minus the previous step's;
 * the first step's (start-up, first weights) is left out of the normal rate.
 *
 * Recovery time of a kill at time k: from k until normal progress resumed,
 * i.e. the start (the previous step's end, at or after k) of the first
 * `window` consecutive steps that each took at most `tolerance` × the
 * normal step interval (fewer when the run ends sooner: all the rest). One
 * normal step is not enough: with α > 0 the groups the kill did not touch
 * can fill a batch while the lost work waits out its timeouts. Undefined
 * when progress never got back to normal before the run ended.
 */

/** The median step interval of a run, its first step left out. */
export function normalStepS(walls: readonly number[]): number {
  const intervals = walls.slice(1).map((w, i) => w - walls[i]!).sort((a, b) => a - b);
  if (intervals.length === 0) throw new RangeError('a normal step interval needs at least two steps');
  const mid = Math.floor(intervals.length / 2);
  return intervals.length % 2 ? intervals[mid]! : (intervals[mid - 1]! + intervals[mid]!) / 2;
}

export function recoveryS(walls: readonly number[], killAtS: number, normalS: number, tolerance = 1.5, window = 3): number | undefined {
  const normal = (i: number) => walls[i]! - walls[i - 1]! <= tolerance * normalS;
  for (let i = 1; i < walls.length; i++) {
    if (walls[i - 1]! < killAtS) continue;
    const steps = Array.from({ length: Math.min(window, walls.length - i) }, (_, k) => i + k);
    if (steps.every(normal)) return walls[i - 1]! - killAtS;
  }
  return undefined;
}

/** Fault-free makespan over the makespan under faults (each the last step's wall_s): 1 when the faults cost nothing. */
export const effectiveTime = (faultFreeS: number, underFaultsS: number): number => faultFreeS / underFaultsS;
