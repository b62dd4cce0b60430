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

/** Failure types no retry policy should retry: retrying cannot fix a bad config or bring back an env that gave up. */
export const NON_RETRYABLE_ENV_ERRORS = [EnvConfigError.name, EnvGaveUpError.name];
