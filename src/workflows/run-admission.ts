/**
 * Admission control (ROLL Flash's AsyncController): what a run may start.
 * The async ratio α bounds the samples buffered, training and running at
 * once; RunState applies the rule in canDispatch() and dispatches prompts in
 * the epoch's seeded order, skipping positions done for good.
 */
import type { GroupRef } from '../core';

export type StalePolicy = 'accept' | 'drop' | 'restart';

export interface AdmissionLimits {
  /** B: samples per training step. */
  samplesPerStep: number;
  /** G: samples per group; B is a multiple of G. */
  groupSize: number;
  /** The admission cap, floor((1 + α)·B) plus the spare groups' samples (Derived.max_samples_in_system; see canDispatch). */
  maxSamplesInSystem: number;
  /** ⌈α⌉: the dispatch staleness a sample may have at consumption before the stale policy applies. */
  maxStaleness: number;
  stalePolicy: StalePolicy;
}

/**
 * Admission control (the async ratio α): a group of G samples may start only while
 *     accepted_unconsumed + running + G <= floor((1 + α)·B) + spare groups·G
 * where accepted_unconsumed counts buffered samples and the batch in
 * training until its step completes (as in AReaL's cumulative rule). So at
 * most (1 + α)·B samples, plus the spares, are ever buffered, in flight or
 * in training. α = 0 is synchronous on-policy training: nothing new starts
 * while a batch trains. The spare groups (redundant env groups,
 * max_additional_running_prompts) run beside the batch and are not trained
 * unless they finish first. The cap is computed once, in
 * src/configs/derive.ts (max_samples_in_system).
 */
export const admits = (samplesInSystem: number, limits: AdmissionLimits): boolean => samplesInSystem + limits.groupSize <= limits.maxSamplesInSystem;

/** The position after `ref` in the run's order: the next of its epoch, or the first of the next epoch. */
export const nextPosition = (ref: GroupRef, datasetSize: number): GroupRef => (ref.position + 1 < datasetSize ? { epoch: ref.epoch, position: ref.position + 1 } : { epoch: ref.epoch + 1, position: 0 });
