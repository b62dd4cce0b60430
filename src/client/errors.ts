/** Errors of the client side (CLI, bench): what an operator command could not reach, said in one line. */

/** Thrown when the Temporal frontend does not answer at the configured address. */
export class TemporalUnreachableError extends Error {
  override readonly name = 'TemporalUnreachableError';
}

/** Thrown when an operator command names a run that does not exist in the namespace. */
export class RunNotFoundError extends Error {
  override readonly name = 'RunNotFoundError';
}

/** Thrown when a query or update needs a worker and none polls the run's task queue (or none answers). */
export class NoWorkerError extends Error {
  override readonly name = 'NoWorkerError';
}

/** Thrown by wait when the run ended without completing: it failed, timed out or was terminated. `status` is Temporal's. */
export class RunFailedError extends Error {
  override readonly name = 'RunFailedError';
  constructor(
    message: string,
    readonly status: string,
  ) {
    super(message);
  }
}
