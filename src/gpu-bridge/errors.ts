/**
 * Errors of the bridge to python-engines. Activities let them propagate; the
 * class name becomes the Temporal failure type, which retry policies match.
 */

/**
 * Thrown when an engine cannot be reached, times out, or answers 5xx: retrying may help.
 * `unreachable`: the connection itself failed (refused, reset, cut mid-answer, timed out),
 * the sign of a dead server that the inference pool routes around; a 5xx is not.
 */
export class EngineUnavailableError extends Error {
  override readonly name = 'EngineUnavailableError';
  constructor(
    message: string,
    readonly unreachable = false,
  ) {
    super(message);
  }
}

/** True for a failed connection to a server (see EngineUnavailableError.unreachable). */
export const isServerLost = (e: unknown): boolean => e instanceof EngineUnavailableError && e.unreachable;

/**
 * Thrown when an inference server refuses a generation (409 version_behind)
 * because its loaded weights are older than the min_version asked for, e.g.
 * after a restart. The bridge brings that server to the run's latest weights
 * and asks again; if this escapes, a later attempt may find it caught up.
 */
export class EngineVersionBehindError extends Error {
  override readonly name = 'EngineVersionBehindError';
  constructor(
    message: string,
    readonly version: number,
    readonly minVersion: number,
  ) {
    super(message);
  }
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
