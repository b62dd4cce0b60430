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
    options?: ErrorOptions,
  ) {
    super(message, options);
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

/**
 * Thrown when an engine answers 4xx: the request cannot succeed as the engine stands, so retrying it as is
 * cannot help. `code` is the engine's name for the state, when it gives one (e.g. trainer_behind: the caller
 * restores the trainer first).
 */
export class EngineRejectedError extends Error {
  override readonly name = 'EngineRejectedError';
  constructor(
    message: string,
    readonly status: number,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** Thrown when an engine cannot take a call now but will later: busy with an earlier call of the same work (a retried train step meets its first attempt), or resumed under a sync by a concurrent catch-up (not_paused). Retry. */
export class EngineBusyError extends Error {
  override readonly name = 'EngineBusyError';
}

/**
 * Thrown when a later turn's prompt does not extend the token ids already
 * held: training on it would train on tokens the model never saw.
 */
export class TokenizationDriftError extends Error {
  override readonly name = 'TokenizationDriftError';
}

/** Thrown when a run would use a trainer another live run holds: two runs cannot share one trainer. */
export class TrainerHeldError extends Error {
  override readonly name = 'TrainerHeldError';
}

/** Thrown when a trainer cannot be brought back to a run's version: no saved state or a batch is missing. */
export class TrainerRecoveryError extends Error {
  override readonly name = 'TrainerRecoveryError';
}

/** Failure types no retry policy should retry. */
export const NON_RETRYABLE_ENGINE_ERRORS = [EngineRejectedError.name, TokenizationDriftError.name, TrainerHeldError.name, TrainerRecoveryError.name];

/** Failure types that, once retries are spent, mean the infrastructure failed, not the model or the config (see workflows/failure.ts). */
export const INFRA_ENGINE_ERRORS = [EngineUnavailableError.name];
