/**
 * W8: SWE-lite episodes, lockstep against env-level async rollout, scheduled from the latencies a real run
 * met. Unlike W1's latency_sim, SWE-lite's env steps are real sandboxed commands, so no seed predicts them:
 * the live bench reads each trajectory's activity execution times from its workflow history (reset, then
 * per turn the generation and the env step, then the sample write) and this DES schedules exactly those with
 * zero orchestration cost. Pure.
 */

/** One trajectory's measured seconds. */
export interface TrajectoryTimes {
  reset_s: number;
  turns: { gen_s: number; env_s: number }[];
  finish_s: number;
}

/** env_async: every trajectory runs alone; the batch ends with the longest one. */
export function envAsyncMakespan(table: readonly TrajectoryTimes[]): number {
  return Math.max(0, ...table.map((t) => t.reset_s + t.turns.reduce((s, x) => s + x.gen_s + x.env_s, 0) + t.finish_s));
}

/**
 * lockstep: all resets, then per turn two barriers (every live trajectory generates, then every one steps its
 * env), then all sample writes; a turn lasts as long as its slowest trajectory. Trajectories that ended drop out.
 */
export function lockstepMakespan(table: readonly TrajectoryTimes[]): number {
  const maxOf = (xs: number[]) => Math.max(0, ...xs);
  const turns = maxOf(table.map((t) => t.turns.length));
  let total = maxOf(table.map((t) => t.reset_s)) + maxOf(table.map((t) => t.finish_s));
  for (let k = 0; k < turns; k++) {
    const live = table.filter((t) => k < t.turns.length).map((t) => t.turns[k]!);
    total += maxOf(live.map((x) => x.gen_s)) + maxOf(live.map((x) => x.env_s));
  }
  return total;
}
