/**
 * The env interface (BaseEnv: reset / step / close). An env keeps its state
 * in a small JSON value that the caller holds — the trajectory workflow keeps
 * it in its history — so an env can be re-created on any worker after a crash
 * instead of living pinned to one process.
 */
import type { EnvLossPolicy } from '../core';
import type { ChatMessage } from '../gpu-bridge';
import type { DatasetIndex } from './dataset-rows';

export interface EnvReset<S> {
  state: S;
  /** The prompt as text: what the UI and the logs show, and turn 0's user message when there are no `messages`. */
  observation: string;
  /** The first turn's chat messages (e.g. a system message, then the user's), sent in place of one user message of `observation`. */
  messages?: ChatMessage[];
  info: Record<string, unknown>;
  /** The env's declared on_env_loss; envs whose state lives in the caller (the TypeScript envs) cannot lose it and declare none. */
  onLoss?: EnvLossPolicy;
  /** Settings this episode's generations must use (see EpisodeGeneration); most envs set none. */
  generation?: EpisodeGeneration;
}

/**
 * Per-episode generation settings an env may ask for. `sim_response_length`
 * is the sim backend's natural response length (other backends refuse it):
 * the latency_sim env sets it from a seeded draw, so a benchmark's
 * simulator knows every length the run will generate.
 */
export interface EpisodeGeneration {
  sim_response_length?: number;
}

export interface EnvStep<S> {
  state: S;
  observation: string;
  reward: number;
  done: boolean;
  info: Record<string, unknown>;
}

export interface Env<S = unknown, C = unknown> {
  readonly name: string;
  /** Validates the env's config; throws EnvConfigError naming the key. */
  parseConfig(raw: unknown): C;
  /** `sample`: the episode's index in its group (0 … G−1; members share the seed), for envs that draw per sample. */
  reset(config: C, seed: number, signal?: AbortSignal, sample?: number): Promise<EnvReset<S>>;
  /** An unparsable action is an invalid action (info.invalid_action), never an exception. */
  /** `attempt` counts retries of this step (0 first), for envs that model failures. */
  step(config: C, state: S, action: string, signal?: AbortSignal, attempt?: number): Promise<EnvStep<S>>;
  /** Envs whose server can lose them: the same episode on a fresh session (on_env_loss replay); `step` throws EnvSessionLostError when it is needed. */
  rebuild?(config: C, state: S, signal?: AbortSignal): Promise<S>;
  /** Envs backed by a file of prompts: how many valid rows it has, and the malformed ones (reported, skipped). */
  index?(config: C): Promise<DatasetIndex>;
}
