/**
 * Errors of the bridge to python-engines. Activities let them propagate; the
 * class name becomes the Temporal failure type, which retry policies match.
 */

/** Thrown when an engine cannot be reached, times out, or answers 5xx: retrying may help. */
export class EngineUnavailableError extends Error {
  override readonly name = 'EngineUnavailableError';
}

/** Thrown when an engine answers 4xx: the request itself is wrong, so retrying cannot help. */
export class EngineRejectedError extends Error {
  override readonly name = 'EngineRejectedError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * Thrown when a later turn's prompt does not extend the token ids already
 * held: training on it would train on tokens the model never saw.
 */
export class TokenizationDriftError extends Error {
  override readonly name = 'TokenizationDriftError';
}

/** Failure types no retry policy should retry. */
export const NON_RETRYABLE_ENGINE_ERRORS = [EngineRejectedError.name, TokenizationDriftError.name];

/** Failure types that, once retries are spent, mean the infrastructure failed, not the model or the config (see workflows/failure.ts). */
export const INFRA_ENGINE_ERRORS = [EngineUnavailableError.name];
