/**
 * latency_sim: a multi-turn env whose only behaviour is how long each step
 * takes (see latency.ts), with a fixed number of turns T. Used by the
 * benchmark workloads; `time_scale` shrinks every latency so a workload
 * finishes in minutes (report the factor).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { explainIssues } from '../configs/explain';
import { formatProblem } from '../configs/errors';
import { EnvConfigError, type Env } from './env';
import { stepLatency } from './latency';

const Config = z.strictObject({
  turns: z.number().int().min(1).default(22).describe('Turns per episode (T).'),
  mean_s: z.number().min(0).default(10).describe('Mean step latency in seconds (μ).'),
  std_s: z.number().min(0).default(10).describe('Standard deviation of the step latency (σ); truncated at 0.'),
  p_slow: z.number().min(0).max(1).default(0).describe('Probability a step is fail-slow.'),
  slow_factor: z.number().min(1).default(5).describe('How many times longer a fail-slow step takes.'),
  p_stop: z.number().min(0).max(1).default(0).describe('Probability a step never answers (fail-stop).'),
  time_scale: z.number().positive().default(1).describe('Multiplies every latency (e.g. 0.01 turns 10 s into 100 ms).'),
  timeout_s: z.number().positive().default(60).describe('A fail-stop step fails after this long (scaled by time_scale); its retry draws anew.'),
});
export type LatencySimConfig = z.output<typeof Config>;

export interface LatencySimState {
  seed: number;
  turn: number;
}

export const latencySim: Env<LatencySimState, LatencySimConfig> = {
  name: 'latency_sim',

  parseConfig(raw) {
    const r = Config.safeParse(raw ?? {});
    if (!r.success) {
      const problems = explainIssues(r.error.issues, raw, Config).map((p) => ({ ...p, path: `config.${p.path}` }));
      throw new EnvConfigError(`latency_sim:\n${problems.map(formatProblem).join('\n')}`);
    }
    return r.data;
  },

  async reset(_config, seed) {
    // The seed in the prompt makes each episode's prompt its own, as dataset rows are (the sim's per-prompt length factor keys on it).
    return { state: { seed, turn: 0 }, observation: `latency_sim: episode ${seed}`, info: {} };
  },

  async step(config, state, _action, signal, attempt = 0) {
    const latency = stepLatency(config, state.seed, state.turn, attempt);
    if (latency === Infinity) {
      // fail-stop: the env never answers; the step times out (a retryable failure) and the retry draws anew.
      await sleep(config.timeout_s * config.time_scale * 1000, undefined, { signal });
      throw new Error(`latency_sim: fail-stop at turn ${state.turn}, no answer in ${config.timeout_s * config.time_scale} s`);
    }
    await sleep(latency * config.time_scale * 1000, undefined, { signal });
    const turn = state.turn + 1;
    return { state: { seed: state.seed, turn }, observation: `turn ${turn}`, reward: 0, done: turn >= config.turns, info: { latency_s: latency } };
  },
};
