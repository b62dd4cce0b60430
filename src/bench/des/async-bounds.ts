/**
 * ROLL Flash's bounds for async training (Sec. 3.1 "Theoretical Analysis",
 * Proposition 1 eq. 4–7 and Proposition 2 eq. 8–11), as written in the
 * paper. Notation: K workers, N samples per step, each sample's generation
 * time lies in [0, L_gen] with mean μ_gen, μ_train training seconds per sample
 * per worker, E reuses of each sample, α the async ratio, β the share of
 * workers that train.
 */

export interface GenerationBoundInput {
  workers: number;
  samplesPerStep: number;
  alpha: number;
  muGen: number;
  lGen: number;
}

/** Prop. 1, eq. 4: Q samples on K workers under queue scheduling finish within Q/K·μ_gen + L_gen. */
export function queueCompletionBound(samples: number, workers: number, muGen: number, lGen: number): number {
  return (samples / workers) * muGen + lGen;
}

/** Prop. 1, eq. 6–7: seconds per sample, sync (Q = N) and async (Q = (α+1)N); and the K = N speedup cap (L_gen + μ_gen)/μ_gen. */
export function generationBounds(i: GenerationBoundInput) {
  return {
    sync_per_sample_s: i.muGen / i.workers + i.lGen / i.samplesPerStep,
    async_per_sample_s: i.muGen / i.workers + i.lGen / ((i.alpha + 1) * i.samplesPerStep),
    max_speedup_when_k_equals_n: i.muGen > 0 ? (i.lGen + i.muGen) / i.muGen : 1,
  };
}

export interface EndToEndBoundInput extends GenerationBoundInput {
  /** β ∈ (0, 1): share of the K workers in the training pool. */
  beta: number;
  muTrain: number;
  /** E: how many times each sample is trained on. */
  reuse: number;
}

/** Prop. 2, eq. 8–11: per-step time bounds (seconds for N samples) and the optimal split β*. */
export function endToEndBounds(i: EndToEndBoundInput) {
  const { workers: K, samplesPerStep: N, alpha, muGen, lGen, beta, muTrain, reuse: E } = i;
  // eq. 8: all K workers generate N samples, then all K train on them.
  const sync = (N / K) * (muGen + E * muTrain) + lGen;
  // eq. 9: (1−β)K workers generate while βK train; the slower pipeline stage bounds the step.
  const asyncGen = (N / ((1 - beta) * K)) * muGen + lGen / ((alpha + 1) * (1 - beta));
  const asyncTrain = (E * N * muTrain) / (beta * K);
  // eq. 10–11: β* balances the two stages.
  const optimalBeta = (E * N * muTrain) / (N * muGen + (K * lGen) / (alpha + 1) + E * N * muTrain);
  const asyncAtOptimal = (N / K) * (muGen + E * muTrain) + lGen / (alpha + 1);
  return {
    sync_step_s: sync,
    async_step_s: Math.max(asyncGen, asyncTrain),
    async_generation_stage_s: asyncGen,
    async_training_stage_s: asyncTrain,
    optimal_beta: optimalBeta,
    async_step_at_optimal_beta_s: asyncAtOptimal,
    // Prop. 2's closing remark: the speedup's limit as α → ∞.
    max_speedup_alpha_infinite: 1 + (K * lGen) / (N * (muGen + E * muTrain)),
  };
}
