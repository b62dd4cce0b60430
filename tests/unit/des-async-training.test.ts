import { describe, expect, it } from 'vitest';
import { asyncTrainingSchedule, desW5, endToEndBounds, generationBounds, queueCompletionBound, type AsyncTrainingPlan } from '../../src/bench/des';

// B = 2 samples per step, 2 generation workers, train step 2 s, 2 steps; the n-th sample takes 1, 3, 1, 3 s.
const plan = (alpha: number): AsyncTrainingPlan => ({ samplesPerStep: 2, groupSize: 1, alpha, steps: 2, genWorkers: 2, trainStepS: 2 });
const gen = (n: number) => [1, 3, 1, 3][n]!;

describe('async training schedule (hand-computed)', () => {
  it('α = 0 is synchronous: step n+1 generates only after train step n', () => {
    // gen 0–3 (1 s and 3 s), train 3–5, gen 5–8, train 8–10.
    const s = asyncTrainingSchedule(plan(0), gen);
    expect(s.makespan_s).toBe(10);
    expect(s.samples_per_s).toBe(0.4);
    expect(s.trainer_idle_ratio).toBeCloseTo(0.6, 12); // trained 4 s of 10
    expect(s.rollout_idle_ratio).toBeCloseTo(0.4, 12); // nothing running during 3–5 and 8–10
    expect(s.staleness_max).toBe(0);
    expect(s.peak_samples_in_system).toBe(2);
  });

  it('α = 4: all four samples start at once (two wait for a worker); batches form in completion order', () => {
    // worker 1: s0 0–1, s2 1–2, s3 2–5; worker 2: s1 0–3. Batch {s0, s2} trains 2–4, batch {s1, s3} trains 5–7.
    const s = asyncTrainingSchedule(plan(4), gen);
    expect(s.makespan_s).toBe(7);
    expect(s.staleness_mean).toBe(0.5); // s1 and s3 started at version 0, trained at version 1
    expect(s.staleness_max).toBe(1);
    expect(s.rollout_idle_ratio).toBeCloseTo(2 / 7, 12);
    expect(s.peak_samples_in_system).toBe(4); // capped by what the remaining steps need, not by (1 + α)·B = 10
  });

  it('fractional α = 0.5 admits floor(1.5 · 2) = 3 samples', () => {
    // s0 0–1, s1 0–3, s2 1–2; batch {s0, s2} trains 2–4; s3 may start only at 4 (3 in system till then): 4–7; train 7–9.
    expect(asyncTrainingSchedule(plan(0.5), gen).makespan_s).toBe(9);
  });

  it('groups are admitted and batched whole', () => {
    // G = 2: group 0 = samples (1 s, 3 s) done at 3, trains 3–5; α = 0 keeps group 1 out until 5; 5–8, train 8–10.
    const s = asyncTrainingSchedule({ ...plan(0), groupSize: 2 }, (g, m) => gen(2 * g + m));
    expect(s.makespan_s).toBe(10);
    expect(() => asyncTrainingSchedule({ ...plan(0), samplesPerStep: 3, groupSize: 2 }, gen)).toThrow(RangeError);
  });
});

describe('ROLL Flash Prop. 1–2 bounds (Sec. 3.1)', () => {
  // K = 4, N = 8, α = 1, μ_gen = 2, L_gen = 10, β = 0.5, μ_train = 1, E = 1.
  const input = { workers: 4, samplesPerStep: 8, alpha: 1, muGen: 2, lGen: 10, beta: 0.5, muTrain: 1, reuse: 1 };

  it('Prop. 1: Q/K·μ + L, and per sample μ/K + L/N (sync) vs μ/K + L/((α+1)N) (async)', () => {
    expect(queueCompletionBound(8, 4, 2, 10)).toBe(14);
    const g = generationBounds(input);
    expect(g.sync_per_sample_s).toBe(1.75); // 0.5 + 10/8
    expect(g.async_per_sample_s).toBe(1.125); // 0.5 + 10/16
    expect(g.max_speedup_when_k_equals_n).toBe(6); // (10 + 2)/2
  });

  it('Prop. 2: eq. 8–11', () => {
    const b = endToEndBounds(input);
    expect(b.sync_step_s).toBe(16); // 8/4·(2 + 1) + 10
    expect(b.async_generation_stage_s).toBe(18); // 8/2·2 + 10/(2·0.5)
    expect(b.async_training_stage_s).toBe(4); // 8·1/(0.5·4)
    expect(b.async_step_s).toBe(18);
    expect(b.optimal_beta).toBeCloseTo(8 / 44, 12); // 8 / (16 + 4·10/2 + 8)
    expect(b.async_step_at_optimal_beta_s).toBe(11); // 8/4·3 + 10/2
    expect(b.max_speedup_alpha_infinite).toBeCloseTo(1 + 40 / 24, 12);
  });

  it('at β* both stages of eq. 9 take eq. 11\'s time', () => {
    const b = endToEndBounds(input);
    const atOptimal = endToEndBounds({ ...input, beta: b.optimal_beta });
    expect(atOptimal.async_generation_stage_s).toBeCloseTo(b.async_step_at_optimal_beta_s, 9);
    expect(atOptimal.async_training_stage_s).toBeCloseTo(b.async_step_at_optimal_beta_s, 9);
  });

  it('the DES never exceeds Prop. 1 for queue-scheduled generation', () => {
    const tail = (n: number) => 1 + ((n * 7919) % 97) / 4; // deterministic, long-ish tail in [1, 25]
    const s = asyncTrainingSchedule({ samplesPerStep: 64, groupSize: 1, alpha: 0, steps: 1, genWorkers: 8, trainStepS: 0 }, tail);
    expect(s.makespan_s).toBeLessThanOrEqual(queueCompletionBound(64, 8, s.mu_gen_s, s.l_gen_s));
  });
});

describe('W5 DES', () => {
  it('reports every α with samples/s, idle ratios and the bounds; async beats sync', () => {
    const r = desW5();
    expect(Object.keys(r.modes)).toEqual(['alpha=0', 'alpha=0.5', 'alpha=1', 'alpha=2', 'alpha=4', 'sync_colocated']);
    expect(r.modes['alpha=0']!.staleness_max).toBe(0);
    expect(r.speedup).toBeGreaterThan(1);
    for (const [name, m] of Object.entries(r.modes)) {
      // Each step's average time stays under the step bound (Prop. 2, or Prop. 1 + the train step at α = 0).
      expect(m.makespan_s / (r.options.steps as number), name).toBeLessThanOrEqual(m.step_bound_s as number);
    }
  });

  it('more asynchrony never lowers throughput on the default workload', () => {
    const r = desW5();
    const rates = [0, 0.5, 1, 2, 4].map((a) => r.modes[`alpha=${a}`]!.samples_per_s as number);
    rates.slice(1).forEach((x, i) => expect(x).toBeGreaterThanOrEqual(rates[i]!));
  });
});
