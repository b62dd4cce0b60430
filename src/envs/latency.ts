/**
 * Env step latencies of the benchmark workloads (ROLL Flash Fig. 9/10):
 * Normal(μ, σ) truncated at 0, optionally fail-slow (a step takes k× longer
 * with probability p_slow) and fail-stop (a step never answers with
 * probability p_stop). Pure and seeded: the live env and the discrete-event
 * simulator draw the same latency for the same (seed, turn).
 */
import { splitmix32 } from '../core';

export interface LatencyModel {
  mean_s: number;
  std_s: number;
  p_slow: number;
  slow_factor: number;
  p_stop: number;
}

/**
 * Seconds the step `turn` of an episode seeded `seed` takes, or Infinity for
 * a fail-stop. `attempt` (0 first) re-draws a retried step: a step retried
 * after a fail-stop runs on a fresh env, which may answer.
 */
export function stepLatency(model: LatencyModel, seed: number, turn: number, attempt = 0): number {
  const next = splitmix32((Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(turn + 1 + 0x10000 * attempt, 0x85ebca77)) >>> 0);
  const [u1, u2, uSlow, uStop] = [next(), next(), next(), next()];
  if (uStop < model.p_stop) return Infinity;
  // Box–Muller; 1 - u1 keeps the log away from 0.
  const normal = Math.sqrt(-2 * Math.log(1 - u1)) * Math.cos(2 * Math.PI * u2);
  const base = Math.max(0, model.mean_s + model.std_s * normal);
  return uSlow < model.p_slow ? base * model.slow_factor : base;
}

/** shared: the G members of an env group draw the same latencies (one env seed); independent: each member its own. */
export type LatencyKeying = 'shared' | 'independent';

/** The seed of member `member`'s own latency stream in the env group seeded `envSeed`. */
export function independentEpisodeSeed(envSeed: number, member: number): number {
  return (Math.imul((envSeed >>> 0) + 1, 0x2545f491) ^ Math.imul(member + 1, 0x6c8e9cf5)) >>> 0;
}

/** The seed whose stream a member's step latencies come from. */
export function episodeSeed(envSeed: number, member: number, keying: LatencyKeying): number {
  return keying === 'shared' ? envSeed : independentEpisodeSeed(envSeed, member);
}
