/**
 * latency_sim: a multi-turn env whose only behaviour is how long each step
 * takes (see latency.ts), with a fixed number of turns T. Used by the
 * benchmark workloads; `time_scale` shrinks every latency so a workload
 * finishes in minutes (report the factor).
 *
 * Two optional draws make it a stand-in for a single-turn verifiable task
 * (W3): `response` sets each episode's natural response length on the sim
 * inference server, `solve` makes the last step's reward 1 when the episode's
 * response solves its prompt. Both are the DES's own draws (draws.ts) of
 * (draw_seed, episode seed = dataset index, sample index in the group), so
 * the simulator knows every length and reward of the run in advance.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { responseLength, responseSolved } from './draws';
import type { Env } from './env';
import { parseEnvConfig } from './env-config';
import { EnvGaveUpError } from './errors';
import { episodeSeed, stepLatency } from './latency';

const Config = z.strictObject({
  turns: z.number().int().min(1).default(22).describe('Turns per episode (T).'),
  mean_s: z.number().min(0).default(10).describe('Mean step latency in seconds (μ).'),
  std_s: z.number().min(0).default(10).describe('Standard deviation of the step latency (σ); truncated at 0.'),
  p_slow: z.number().min(0).max(1).default(0).describe('Probability a step is fail-slow.'),
  slow_factor: z.number().min(1).default(5).describe('How many times longer a fail-slow step takes.'),
  p_stop: z.number().min(0).max(1).default(0).describe('Probability a step never answers (fail-stop).'),
  time_scale: z.number().positive().default(1).describe('Multiplies every latency (e.g. 0.01 turns 10 s into 100 ms).'),
  timeout_s: z.number().positive().default(60).describe('A fail-stop step fails after this long (scaled by time_scale).'),
  fail_stop: z
    .enum(['retry', 'fail'])
    .default('retry')
    .describe('After a fail-stop times out: retry (the step is retried on a fresh env, which draws anew) or fail (EnvGaveUpError, not retried: the trajectory and its group fail, as ROLL Flash\'s W2 models it).'),
  latency_keying: z
    .enum(['shared', 'independent'])
    .default('shared')
    .describe('shared: the members of an env group draw the same step latencies (one env seed); independent: each member its own (as separate env instances would).'),
  draw_seed: z.number().int().min(0).default(0).describe('Seed of the response and solve draws (the benchmarks pass the run seed, as their DES does).'),
  response: z
    .strictObject({
      mean_tokens: z.number().positive().describe('Mean natural response length (log-normal, before the cut).'),
      sigma_prompt: z.number().min(0).default(0).describe('Log-space std of the per-prompt length factor (shared by the group).'),
      sigma_sample: z.number().min(0).default(0).describe('Log-space std of the per-response factor.'),
      max_tokens: z.number().int().min(1).describe('Lengths are cut here (set it to the run\'s max_new_tokens).'),
    })
    .optional()
    .describe('Sets each episode\'s natural response length on the sim inference server (sim backend only; per sample, so it needs is_num_return_sequences_expand).'),
  solve: z
    .strictObject({
      p_easy: z.number().min(0).max(1).describe('Share of prompts every response solves.'),
      p_hard: z.number().min(0).max(1).describe('Share of prompts no response solves; the rest are solved with p ~ U(0, 1) per response.'),
    })
    .refine((v) => v.p_easy + v.p_hard <= 1, { message: 'p_easy + p_hard must be at most 1' })
    .optional()
    .describe('The last step\'s reward: 1 when the episode\'s response solves its prompt, else 0 (without it every reward is 0).'),
});
export type LatencySimConfig = z.output<typeof Config>;

export interface LatencySimState {
  seed: number;
  turn: number;
  /** Index in the group (absent in states from before the field existed: 0). */
  sample?: number;
}

export const latencySim: Env<LatencySimState, LatencySimConfig> = {
  name: 'latency_sim',

  parseConfig: (raw) => parseEnvConfig('latency_sim', Config, raw),

  async reset(config, seed, _signal, sample = 0) {
    const r = config.response;
    const length = r && responseLength({ mean: r.mean_tokens, sigma_prompt: r.sigma_prompt, sigma_sample: r.sigma_sample, max: r.max_tokens }, config.draw_seed, seed, sample);
    // The seed in the prompt makes each episode's prompt its own, as dataset rows are (the sim's per-prompt length factor keys on it).
    return { state: { seed, turn: 0, sample }, observation: `latency_sim: episode ${seed}`, info: {}, ...(length ? { generation: { sim_response_length: length } } : {}) };
  },

  async step(config, state, _action, signal, attempt = 0) {
    const latency = stepLatency(config, episodeSeed(state.seed, state.sample ?? 0, config.latency_keying), state.turn, attempt);
    if (latency === Infinity) {
      // fail-stop: the env never answers; the step times out, and either its retry draws anew or the episode is given up.
      await sleep(config.timeout_s * config.time_scale * 1000, undefined, { signal });
      const message = `latency_sim: fail-stop at turn ${state.turn}, no answer in ${config.timeout_s * config.time_scale} s`;
      throw config.fail_stop === 'fail' ? new EnvGaveUpError(message) : new Error(message);
    }
    await sleep(latency * config.time_scale * 1000, undefined, { signal });
    const turn = state.turn + 1;
    const done = turn >= config.turns;
    const solved = done && config.solve !== undefined && responseSolved(config.solve, config.draw_seed, state.seed, state.sample ?? 0);
    return { state: { ...state, turn }, observation: `turn ${turn}`, reward: solved ? 1 : 0, done, info: { latency_s: latency } };
  },
};
