/** Errors of the envs. The class name is the Temporal failure type retry policies match. */
import type { ConfigProblem } from '../configs/errors';

/** Thrown when an env config has a bad key or value; names both. `problems` have paths relative to the env config. */
export class EnvConfigError extends Error {
  override readonly name = 'EnvConfigError';
  constructor(
    message: string,
    readonly problems: ConfigProblem[] = [],
  ) {
    super(message);
  }
}

/** Thrown when an env gives up on an episode (e.g. latency_sim's fail-stop with fail_stop: fail): not retried, the trajectory fails. */
export class EnvGaveUpError extends Error {
  override readonly name = 'EnvGaveUpError';
}

/**
 * Thrown when the env server no longer knows the episode's session (it was
 * restarted or the session expired) and the env's on_env_loss is restart or
 * drop: the trajectory workflow starts the episode over, or fails it as an
 * infrastructure failure. (With replay the activity rebuilds the session.)
 */
export class EnvSessionLostError extends Error {
  override readonly name = 'EnvSessionLostError';
}

/**
 * Thrown when the env's verifier could not score a response (an LLM judge gave no readable grade: the env
 * server's 422 reward_unscored). Never a made-up reward: the trajectory fails, its group is not trained, and
 * the run counts its samples as unscored. Not retried: the verifier already asked its judge again.
 */
export class RewardUnscoredError extends Error {
  override readonly name = 'RewardUnscoredError';
}

/** Failure types no retry policy should retry: retrying cannot fix a bad config, bring back an env that gave up, or a lost session. */
export const NON_RETRYABLE_ENV_ERRORS = [EnvConfigError.name, EnvGaveUpError.name, EnvSessionLostError.name, RewardUnscoredError.name];

/** Env failures that are the env's, never the model's: an env that gave up, a session lost (on_env_loss: drop). */
export const INFRA_ENV_ERRORS = [EnvGaveUpError.name, EnvSessionLostError.name];
