/**
 * Seeded draws for the generation-side workloads (W3–W5): response lengths,
 * whether a response solves its prompt, and per-sample generation seconds.
 * Each draw is a pure function of (seed, dataset index, sample), like
 * src/envs/latency.ts is of (seed, turn): the latency_sim env sends the sim
 * inference server (`sim_response_length`) the same lengths the DES schedules,
 * and rewards with the same verdicts.
 */
import { splitmix32 } from '../core';

// Salts keep the streams of different draws about the same sample independent.
const PROMPT_LENGTH = 0x1f3d5b79;
const SAMPLE_LENGTH = 0x2b7e1516;
const PROMPT_SOLVE = 0x3c6ef372;
const SAMPLE_SOLVE = 0x510e527f;

function stream(seed: number, index: number, sample: number, salt: number): () => number {
  const key = Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca77) ^ Math.imul(sample + 1, 0xc2b2ae3d) ^ salt;
  return splitmix32(key >>> 0);
}

/** Box–Muller; 1 − u keeps the log away from 0. */
function standardNormal(next: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
}

/**
 * A long-tailed quantity (tokens or seconds): log-normal with mean `mean`, a
 * per-prompt factor (σ_prompt: hard prompts make all their responses long, the
 * straggler prompt replication spreads) and a per-sample factor (σ_sample).
 */
export interface LongTail {
  mean: number;
  sigma_prompt: number;
  sigma_sample: number;
  /** Upper cut (max_tokens, or the longest a generation may take). */
  max: number;
}

export function longTailDraw(model: LongTail, seed: number, index: number, sample: number): number {
  const zPrompt = standardNormal(stream(seed, index, 0, PROMPT_LENGTH));
  const zSample = standardNormal(stream(seed, index, sample, SAMPLE_LENGTH));
  const mu = Math.log(model.mean) - (model.sigma_prompt ** 2 + model.sigma_sample ** 2) / 2; // so that E = mean before the cut
  return Math.min(model.max, Math.exp(mu + model.sigma_prompt * zPrompt + model.sigma_sample * zSample));
}

/** Natural length in tokens of response `sample` of the prompt at dataset index `index` (at least 1). */
export function responseLength(model: LongTail, seed: number, index: number, sample: number): number {
  return Math.max(1, Math.round(longTailDraw(model, seed, index, sample)));
}

/**
 * How often a prompt's responses are correct: a share of prompts is solved by
 * every response (easy), a share by none (hard), the rest with p ~ U(0, 1).
 * Easy and hard groups have zero reward variance and fail `std_filter`.
 */
export interface SolveModel {
  p_easy: number;
  p_hard: number;
}

export function promptSolveRate(model: SolveModel, seed: number, index: number): number {
  const next = stream(seed, index, 0, PROMPT_SOLVE);
  const u = next();
  if (u < model.p_easy) return 1;
  if (u < model.p_easy + model.p_hard) return 0;
  return next();
}

export function responseSolved(model: SolveModel, seed: number, index: number, sample: number): boolean {
  return stream(seed, index, sample, SAMPLE_SOLVE)() < promptSolveRate(model, seed, index);
}

/** GRPO's std filter: a group teaches nothing when every reward is equal. */
export function groupPassesStdFilter(solved: readonly boolean[]): boolean {
  return solved.some((s) => s !== solved[0]);
}
