import { describe, expect, it } from 'vitest';
import { DesOptionsError, desSweep, runDes, runDesJson, type DesWorkload } from '../../src/bench/des';

const WORKLOADS: DesWorkload[] = ['w1', 'w2', 'w3', 'w4', 'w5'];
// Small settings keep the suite quick; defaults are exercised in each workload's own tests.
const SMALL = { w1: { batch: 64 }, w2: { turns: 5 }, w3: {}, w4: { prompts: 8 }, w5: { steps: 4 } } as const;

describe('runDes', () => {
  it.each(WORKLOADS)('%s: plain JSON with the seed, resolved options, both modes and their speedup', (w) => {
    const r = runDes(w, SMALL[w]);
    expect(JSON.parse(JSON.stringify(r))).toEqual(r); // no Infinity, NaN or undefined
    expect(r.workload).toBe(w);
    expect(r.options.seed).toBe(r.seed);
    expect(r.modes[r.baseline]?.makespan_s).toBeGreaterThan(0);
    expect(r.modes[r.rollflow]?.makespan_s).toBeGreaterThan(0);
    expect(r.speedup).toBeCloseTo(r.modes[r.baseline]!.makespan_s / r.modes[r.rollflow]!.makespan_s, 3);
  });

  it.each(WORKLOADS)('%s: the same seed gives the same result; another seed another', (w) => {
    expect(runDes(w, SMALL[w])).toEqual(runDes(w, SMALL[w]));
    expect(runDes(w, { ...SMALL[w], seed: 2 }).modes).not.toEqual(runDes(w, SMALL[w]).modes);
  });

  it('runDesJson is the printed form', () => {
    expect(JSON.parse(runDesJson('w1', { batch: 8 }))).toEqual(runDes('w1', { batch: 8 }));
  });

  it('a bad option names the key, the value and what was expected', () => {
    expect(() => runDes('w1', { batch: 0 })).toThrow(DesOptionsError);
    expect(() => runDes('w1', { batch: 0 })).toThrow('w1.batch: got 0; expected a number >= 1');
    expect(() => runDes('w1', { turn: 3 } as never)).toThrow('w1.turn: got 3; unknown key; did you mean "turns"?');
    expect(() => runDes('w9' as DesWorkload)).toThrow('unknown workload w9');
  });
});

describe('desSweep', () => {
  it('W1: batch {64..512} × (μ, σ) {(10,1), (10,7), (10,10), (50,5)}', () => {
    const cells = desSweep('w1', { turns: 4 });
    expect(cells).toHaveLength(16);
    expect(cells.map((c) => [c.options.batch, c.options.mean_s, c.options.std_s])).toContainEqual([512, 50, 5]);
  });

  it('W3 and W4: the paper\'s configurations; W5: one result holding every α', () => {
    expect(desSweep('w3', { mean_tokens: 50 }).map((c) => c.options.prompts)).toEqual([8, 16, 32, 64]);
    expect(desSweep('w4', { mean_tokens: 50 }).map((c) => [c.options.prompts, c.options.n])).toEqual([
      [32, 16],
      [64, 16],
      [16, 32],
      [16, 64],
    ]);
    expect(desSweep('w5', { steps: 2 })).toHaveLength(1);
  });
});
