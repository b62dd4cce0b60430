import { describe, expect, it } from 'vitest';
import { independentEpisodeSeed, stepLatency, type LatencyModel } from '../../src/envs/latency';
import { latencySim } from '../../src/envs/latency-sim';
import { EnvConfigError, EnvGaveUpError } from '../../src/envs/errors';
import { responseLength, responseSolved } from '../../src/envs/draws';

const model = (over: Partial<LatencyModel> = {}): LatencyModel => ({ mean_s: 10, std_s: 10, p_slow: 0, slow_factor: 5, p_stop: 0, ...over });

describe('stepLatency', () => {
  it('is a function of (seed, turn) alone', () => {
    expect(stepLatency(model(), 3, 7)).toBe(stepLatency(model(), 3, 7));
    expect(stepLatency(model(), 3, 7)).not.toBe(stepLatency(model(), 3, 8));
  });

  it('follows Normal(μ, σ) truncated at 0', () => {
    const xs = Array.from({ length: 20_000 }, (_, i) => stepLatency(model({ mean_s: 10, std_s: 1 }), i, 0));
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
    expect(Math.abs(mean - 10)).toBeLessThan(0.05);
    expect(Math.abs(sd - 1)).toBeLessThan(0.05);
    // σ = μ: about 16% of the mass is below 0 and truncated to exactly 0
    const zeros = Array.from({ length: 20_000 }, (_, i) => stepLatency(model(), i, 1)).filter((x) => x === 0).length / 20_000;
    expect(Math.abs(zeros - 0.1587)).toBeLessThan(0.01);
  });

  it('applies fail-slow and fail-stop at their rates', () => {
    const n = 20_000;
    const slow = Array.from({ length: n }, (_, i) => stepLatency(model({ std_s: 0, p_slow: 0.1, slow_factor: 5 }), i, 0));
    expect(Math.abs(slow.filter((x) => x === 50).length / n - 0.1)).toBeLessThan(0.01);
    const stops = Array.from({ length: n }, (_, i) => stepLatency(model({ p_stop: 0.05 }), i, 0)).filter((x) => x === Infinity).length / n;
    expect(Math.abs(stops - 0.05)).toBeLessThan(0.01);
  });
});

describe('latency_sim env', () => {
  it('runs T turns and ends the episode', async () => {
    const config = latencySim.parseConfig({ turns: 3, mean_s: 0.001, std_s: 0, time_scale: 0.001 });
    let { state } = await latencySim.reset(config, 5);
    const dones: boolean[] = [];
    for (let t = 0; t < 3; t++) {
      const r = await latencySim.step(config, state, 'anything');
      state = r.state;
      dones.push(r.done);
    }
    expect(dones).toEqual([false, false, true]);
    expect(state).toEqual({ seed: 5, turn: 3, sample: 0 });
  });

  it('a fail-stop step ends early when the activity is cancelled', async () => {
    const config = latencySim.parseConfig({ p_stop: 1 });
    const { state } = await latencySim.reset(config, 1);
    const abort = new AbortController();
    const step = latencySim.step(config, state, 'x', abort.signal);
    abort.abort(new Error('activity cancelled'));
    await expect(step).rejects.toThrow(/aborted/);
  });

  it('a fail-stop step times out with a retryable error; its retry draws anew', async () => {
    const config = latencySim.parseConfig({ p_stop: 0.5, timeout_s: 1, time_scale: 0.001 });
    const seed = Array.from({ length: 100 }, (_, i) => i).find((i) => stepLatency(config, i, 0) === Infinity && stepLatency(config, i, 0, 1) !== Infinity)!;
    expect(seed).toBeDefined();
    const { state } = await latencySim.reset(config, seed);
    await expect(latencySim.step(config, state, 'x', undefined, 0)).rejects.toThrow('fail-stop at turn 0');
    await expect(latencySim.step(config, state, 'x', undefined, 1)).resolves.toMatchObject({ state: { seed, turn: 1 } });
    // the first attempt draws what it always drew (the DES relies on it)
    expect(stepLatency(config, seed, 3, 0)).toBe(stepLatency(config, seed, 3));
  });

  it('names a bad config key', () => {
    expect(() => latencySim.parseConfig({ turns: 0 })).toThrow(EnvConfigError);
    expect(() => latencySim.parseConfig({ turns: 0 })).toThrow('config.turns: got 0; expected a number >= 1');
    expect(() => latencySim.parseConfig({ trns: 3 })).toThrow('config.trns: got 3; unknown key; did you mean "turns"?');
  });

  it('without response or solve: no generation settings and reward 0', async () => {
    const config = latencySim.parseConfig({ turns: 1, mean_s: 0, std_s: 0 });
    const reset = await latencySim.reset(config, 9, undefined, 2);
    expect(reset.generation).toBeUndefined();
    expect((await latencySim.step(config, reset.state, '')).reward).toBe(0);
  });

  it('response and solve are the DES draws of (draw_seed, episode seed, sample index)', async () => {
    const response = { mean_tokens: 500, sigma_prompt: 0.8, sigma_sample: 0.4, max_tokens: 2048 };
    const solve = { p_easy: 0.2, p_hard: 0.2 };
    const config = latencySim.parseConfig({ turns: 1, mean_s: 0, std_s: 0, draw_seed: 7, response, solve });
    const lengthModel = { mean: 500, sigma_prompt: 0.8, sigma_sample: 0.4, max: 2048 };
    const rewards: number[] = [];
    const lengths: number[] = [];
    for (let sample = 0; sample < 8; sample++) {
      const reset = await latencySim.reset(config, 123, undefined, sample);
      lengths.push(reset.generation!.sim_response_length!);
      expect(reset.generation!.sim_response_length).toBe(responseLength(lengthModel, 7, 123, sample));
      const step = await latencySim.step(config, reset.state, 'any action');
      expect(step.reward).toBe(responseSolved(solve, 7, 123, sample) ? 1 : 0);
      rewards.push(step.reward);
    }
    // members differ (the per-sample factor), and the seeds change the draws
    expect(new Set(lengths).size).toBeGreaterThan(1);
    const other = latencySim.parseConfig({ turns: 1, mean_s: 0, std_s: 0, draw_seed: 8, response, solve });
    const otherLengths = await Promise.all([0, 1, 2, 3].map(async (s) => (await latencySim.reset(other, 123, undefined, s)).generation!.sim_response_length));
    expect(otherLengths).not.toEqual(lengths.slice(0, 4));
  });

  it('solve: easy prompts are always solved, hard never, the rest per response', async () => {
    const rewardsOf = async (solve: { p_easy: number; p_hard: number }, seed: number) => {
      const config = latencySim.parseConfig({ turns: 1, mean_s: 0, std_s: 0, solve });
      return Promise.all(Array.from({ length: 8 }, async (_, sample) => (await latencySim.step(config, (await latencySim.reset(config, seed, undefined, sample)).state, '')).reward));
    };
    expect(await rewardsOf({ p_easy: 1, p_hard: 0 }, 4)).toEqual(new Array(8).fill(1));
    expect(await rewardsOf({ p_easy: 0, p_hard: 1 }, 4)).toEqual(new Array(8).fill(0));
    const mixed = await Promise.all(Array.from({ length: 50 }, (_, seed) => rewardsOf({ p_easy: 0, p_hard: 0 }, seed)));
    expect(mixed.filter((r) => new Set(r).size === 2).length).toBeGreaterThan(25);
  });

  it('the reward comes on the last turn only', async () => {
    const config = latencySim.parseConfig({ turns: 2, mean_s: 0, std_s: 0, solve: { p_easy: 1, p_hard: 0 } });
    let { state } = await latencySim.reset(config, 1);
    const first = await latencySim.step(config, state, '');
    state = first.state;
    expect([first.reward, (await latencySim.step(config, state, '')).reward]).toEqual([0, 1]);
  });

  it('names a bad solve or response setting', () => {
    expect(() => latencySim.parseConfig({ solve: { p_easy: 0.7, p_hard: 0.6 } })).toThrow(/config\.solve.*p_easy \+ p_hard must be at most 1/s);
    expect(() => latencySim.parseConfig({ response: { mean_tokens: 10 } })).toThrow(/config\.response\.max_tokens/);
  });

  it('fail_stop: fail gives the episode up (EnvGaveUpError, not retried) after the timeout', async () => {
    const config = latencySim.parseConfig({ p_stop: 1, timeout_s: 1, time_scale: 0.001, fail_stop: 'fail' });
    const { state } = await latencySim.reset(config, 3);
    const err = await latencySim.step(config, state, 'x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvGaveUpError);
    expect((err as Error).name).toBe('EnvGaveUpError'); // the type the activity retry policy lists as non-retryable
  });

  it('latency_keying: shared gives the members of a group one latency stream, independent one each', async () => {
    const latencies = async (keying: 'shared' | 'independent') => {
      const config = latencySim.parseConfig({ turns: 1, mean_s: 0.001, std_s: 0.001, time_scale: 0.001, latency_keying: keying });
      return Promise.all([0, 1, 2].map(async (sample) => (await latencySim.step(config, (await latencySim.reset(config, 11, undefined, sample)).state, '')).info.latency_s));
    };
    const model = { mean_s: 0.001, std_s: 0.001, p_slow: 0, slow_factor: 5, p_stop: 0 };
    expect(await latencies('shared')).toEqual([0, 1, 2].map(() => stepLatency(model, 11, 0)));
    expect(await latencies('independent')).toEqual([0, 1, 2].map((m) => stepLatency(model, independentEpisodeSeed(11, m), 0)));
  });
});
