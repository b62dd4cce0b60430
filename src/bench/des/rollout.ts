/**
 * Env-level rollout schedules (ROLL Flash Sec. 5.2.1, Fig. 9). A trajectory
 * alternates an LLM generate call and an env step for each of its turns:
 * llm[i][t] then env[i][t]. Inference capacity is taken as unlimited (a turn's
 * generation takes the same time however many run together), so the only
 * thing that differs between the modes is who waits for whom.
 */

/** Seconds per trajectory and turn; rows may differ in length (trajectories with fewer turns). */
export interface TurnTimes {
  llm: readonly (readonly number[])[];
  env: readonly (readonly number[])[];
}

/** A table of `rows` × `turns` holding one value, e.g. a constant LLM time per turn. */
export function constantTable(rows: number, turns: number, seconds: number): number[][] {
  return Array.from({ length: rows }, () => new Array<number>(turns).fill(seconds));
}

function checkShape(times: TurnTimes): void {
  if (times.llm.length !== times.env.length) throw new RangeError(`llm has ${times.llm.length} trajectories, env ${times.env.length}`);
  times.env.forEach((row, i) => {
    if (times.llm[i]!.length !== row.length) throw new RangeError(`trajectory ${i}: ${times.llm[i]!.length} llm turns, ${row.length} env turns`);
  });
}

/** env_async: each trajectory runs gen → step → gen … on its own; its duration is the sum of its turns. */
export function trajectoryDurations(times: TurnTimes): number[] {
  checkShape(times);
  return times.env.map((row, i) => row.reduce((s, env, t) => s + times.llm[i]![t]! + env, 0));
}

/** env_async makespan: max over trajectories of Σ_t (llm + env). */
export function envAsyncMakespan(times: TurnTimes): number {
  return Math.max(0, ...trajectoryDurations(times));
}

/**
 * lockstep: turn t starts for the whole batch when every trajectory finished
 * turn t − 1; the batch's generation is one batched call (as long as its
 * slowest member), then every env steps and the batch waits for the slowest.
 * Returns the seconds each turn took; the makespan is their sum:
 * Σ_t (max_i llm[i][t] + max_i env[i][t]).
 */
export function lockstepTurnSeconds(times: TurnTimes): number[] {
  checkShape(times);
  const turns = Math.max(0, ...times.env.map((row) => row.length));
  return Array.from({ length: turns }, (_, t) => {
    let llm = 0;
    let env = 0;
    times.env.forEach((row, i) => {
      if (t < row.length) {
        llm = Math.max(llm, times.llm[i]![t]!);
        env = Math.max(env, row[t]!);
      }
    });
    return llm + env;
  });
}

export function lockstepMakespan(times: TurnTimes): number {
  return lockstepTurnSeconds(times).reduce((a, b) => a + b, 0);
}
