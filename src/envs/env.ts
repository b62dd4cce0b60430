/**
 * The env interface (BaseEnv: reset / step / close). An env keeps its state
 * in a small JSON value that the caller holds — the trajectory workflow keeps
 * it in its history — so an env can be re-created on any worker after a crash
 * instead of living pinned to one process.
 */

export interface EnvReset<S> {
  state: S;
  observation: string;
  info: Record<string, unknown>;
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
  reset(config: C, seed: number, signal?: AbortSignal): Promise<EnvReset<S>>;
  /** An unparsable action is an invalid action (info.invalid_action), never an exception. */
  /** `attempt` counts retries of this step (0 first), for envs that model failures. */
  step(config: C, state: S, action: string, signal?: AbortSignal, attempt?: number): Promise<EnvStep<S>>;
  /** Envs backed by a file of prompts: how many valid rows it has, and the malformed ones (reported, skipped). */
  index?(config: C): Promise<{ size: number; malformed: number; problems: string[] }>;
}

/** Thrown when an env config has a bad key or value; names both. */
export class EnvConfigError extends Error {
  override readonly name = 'EnvConfigError';
}
