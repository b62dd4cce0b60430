import { describe, expect, it } from 'vitest';
import { stepLatency, type LatencyModel } from '../../src/envs/latency';
import { epochOrder } from '../../src/core';
import { batchLatencyTable, constantTable, desW1, dispatchOrder, envAsyncMakespan, lockstepMakespan, lockstepTurnSeconds, trajectoryDurations } from '../../src/bench/des';

const model = (over: Partial<LatencyModel> = {}): LatencyModel => ({ mean_s: 10, std_s: 10, p_slow: 0, slow_factor: 5, p_stop: 0, ...over });
const noLlm = (env: number[][]) => ({ env, llm: env.map((row) => row.map(() => 0)) });

describe('lockstep vs env_async on hand-computed tables', () => {
  it('every step 1 s, T turns: both take T, speedup 1', () => {
    const times = noLlm(constantTable(4, 5, 1));
    expect(lockstepMakespan(times)).toBe(5);
    expect(envAsyncMakespan(times)).toBe(5);
  });

  it('one env: both are the sum of its steps', () => {
    const times = noLlm([[2, 0.5, 3]]);
    expect(lockstepMakespan(times)).toBe(5.5);
    expect(envAsyncMakespan(times)).toBe(5.5);
  });

  it('two envs: lockstep is Σ_t max_i, env_async is max_i Σ_t', () => {
    // env A: 1 then 3; env B: 2 then 1. lockstep: max(1,2) + max(3,1) = 5; async: max(1+3, 2+1) = 4.
    const times = noLlm([
      [1, 3],
      [2, 1],
    ]);
    expect(lockstepTurnSeconds(times)).toEqual([2, 3]);
    expect(lockstepMakespan(times)).toBe(5);
    expect(trajectoryDurations(times)).toEqual([4, 3]);
    expect(envAsyncMakespan(times)).toBe(4);
  });

  it('a turn\'s batched generation lasts as long as its slowest member', () => {
    // llm A: 0.5, 0.5; llm B: 1, 0. lockstep: (1 + 2) + (0.5 + 3) = 6.5; async: max(0.5+1+0.5+3, 1+2+0+1) = 5.
    const times = {
      env: [
        [1, 3],
        [2, 1],
      ],
      llm: [
        [0.5, 0.5],
        [1, 0],
      ],
    };
    expect(lockstepMakespan(times)).toBe(6.5);
    expect(envAsyncMakespan(times)).toBe(5);
  });

  it('a trajectory with fewer turns drops out of later lockstep turns', () => {
    // A: 1; B: 2, 2. lockstep: max(1, 2) + 2 = 4; async: max(1, 4) = 4.
    const times = noLlm([[1], [2, 2]]);
    expect(lockstepMakespan(times)).toBe(4);
    expect(envAsyncMakespan(times)).toBe(4);
  });

  it('lockstep is never faster than env_async', () => {
    const env = batchLatencyTable({ model: model(), turns: 7, seed: 3, datasetSize: 100, groups: 30, groupSize: 1 });
    expect(lockstepMakespan(noLlm(env))).toBeGreaterThanOrEqual(envAsyncMakespan(noLlm(env)));
  });

  it('rejects tables whose llm and env shapes differ', () => {
    expect(() => lockstepMakespan({ env: [[1, 2]], llm: [[0]] })).toThrow(RangeError);
  });
});

describe('latency table: the same seconds the live env sleeps', () => {
  it('row g is stepLatency(model, env seed of the g-th dispatched group, turn)', () => {
    const table = batchLatencyTable({ model: model(), turns: 4, seed: 9, datasetSize: 50, groups: 6, groupSize: 1 });
    const order = epochOrder(50, 9, 0);
    table.forEach((row, g) => row.forEach((x, t) => expect(x).toBe(stepLatency(model(), order[g]!, t))));
  });

  it('members of a group share the env seed, hence their latencies (shared), unless keyed independently', () => {
    const shared = batchLatencyTable({ model: model(), turns: 3, seed: 1, datasetSize: 50, groups: 2, groupSize: 3 });
    expect(shared[0]).toEqual(shared[1]);
    expect(shared[0]).toEqual(shared[2]);
    expect(shared[0]).not.toEqual(shared[3]);
    const independent = batchLatencyTable({ model: model(), turns: 3, seed: 1, datasetSize: 50, groups: 2, groupSize: 3, keying: 'independent' });
    expect(independent[0]).not.toEqual(independent[1]);
  });

  it('dispatch order follows the run workflow: the seeded epoch order, then the next epoch', () => {
    const at = dispatchOrder(5, 2);
    expect([0, 1, 2, 3, 4].map(at)).toEqual(epochOrder(5, 2, 0));
    expect([5, 6, 7, 8, 9].map(at)).toEqual(epochOrder(5, 2, 1));
  });

  it('time_scale multiplies every latency, fail-stops stay Infinity', () => {
    const m = model({ p_stop: 0.3 });
    const plain = batchLatencyTable({ model: m, turns: 5, seed: 4, datasetSize: 40, groups: 8, groupSize: 1 });
    const scaled = batchLatencyTable({ model: m, turns: 5, seed: 4, datasetSize: 40, groups: 8, groupSize: 1, timeScale: 0.01 });
    expect(plain.flat().some((x) => x === Infinity)).toBe(true);
    scaled.flat().forEach((x, i) => (plain.flat()[i] === Infinity ? expect(x).toBe(Infinity) : expect(x).toBeCloseTo(plain.flat()[i]! * 0.01, 12)));
  });
});

describe('W1 DES', () => {
  it('deterministic latencies (σ = 0): T turns of μ in both modes', () => {
    const r = desW1({ batch: 8, turns: 5, mean_s: 1, std_s: 0 });
    expect(r.modes.lockstep!.makespan_s).toBe(5);
    expect(r.modes.env_async!.makespan_s).toBe(5);
    expect(r.speedup).toBe(1);
  });

  it('a constant LLM time adds T·llm_s to both modes', () => {
    const r = desW1({ batch: 4, turns: 3, mean_s: 1, std_s: 0, llm_s: 0.5 });
    expect(r.modes.lockstep!.makespan_s).toBe(4.5);
    expect(r.modes.env_async!.makespan_s).toBe(4.5);
  });

  it('time_scale scales both makespans and leaves the speedup', () => {
    const a = desW1({ batch: 64 });
    const b = desW1({ batch: 64, time_scale: 0.01 });
    expect(b.modes.lockstep!.makespan_s).toBeCloseTo(a.modes.lockstep!.makespan_s * 0.01, 4);
    expect(b.speedup).toBeCloseTo(a.speedup, 3);
  });

  it('steps run back to back on the next dispatch positions', () => {
    const two = desW1({ batch: 16, steps: 2 });
    const first = desW1({ batch: 16 });
    expect(two.modes.lockstep!.makespan_s).toBeGreaterThan(first.modes.lockstep!.makespan_s);
    expect(two.modes.lockstep!.per_step_s).not.toBe(first.modes.lockstep!.per_step_s);
  });

  // BENCHMARKS.md: the DES with T = 22 gives (10,1) 1.22×, (10,7) 2.12×, (10,10) 2.37× (880 s → 371 s), (50,5) 1.22× at batch 512.
  it.each([
    [10, 1, 1.22],
    [10, 7, 2.12],
    [10, 10, 2.37],
    [50, 5, 1.22],
  ])('calibration, seed 1, batch 512, T = 22, (%d, %d): %d× within 3%%', (mean_s, std_s, expected) => {
    const r = desW1({ seed: 1, batch: 512, turns: 22, mean_s, std_s });
    expect(Math.abs(r.speedup / expected - 1)).toBeLessThan(0.03);
  });

  it('calibration, (10, 10): 880 s → 371 s within 3%', () => {
    const r = desW1({ seed: 1, batch: 512, turns: 22, mean_s: 10, std_s: 10 });
    expect(Math.abs(r.modes.lockstep!.makespan_s / 880 - 1)).toBeLessThan(0.03);
    expect(Math.abs(r.modes.env_async!.makespan_s / 371 - 1)).toBeLessThan(0.03);
  });

  it('over seeds, the (10, 10) speedup averages near the paper\'s 2.46× (a single seed varies by about ±5%)', () => {
    const speedups = [1, 2, 3, 4, 5, 6, 7, 8].map((seed) => desW1({ seed, batch: 512, mean_s: 10, std_s: 10 }).speedup);
    const mean = speedups.reduce((a, b) => a + b, 0) / speedups.length;
    expect(mean).toBeGreaterThan(2.37 * 0.97);
    expect(mean).toBeLessThan(2.46 * 1.03);
  });
});
