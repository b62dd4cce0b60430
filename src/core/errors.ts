/**
 * Errors the activities raise themselves, named here so the workflows' retry
 * policies can match them without importing activity code. The class name is
 * the Temporal failure type retry policies match. (The boundaries' own errors
 * stay beside them: gpu-bridge/errors.ts, store/errors.ts, envs/errors.ts,
 * configs/errors.ts.)
 */

/**
 * Thrown when an activity's result would be too large a Temporal payload
 * (temporal.worker.max_result_bytes): the server would reject it, and every
 * retry would produce the same result, so the run would wait without end.
 */
export class PayloadTooLargeError extends Error {
  override readonly name = 'PayloadTooLargeError';
}


/**
 * Attempts an env step gets when the env server answers its health check but the step keeps failing on its own
 * (1 + 2 + 4 + 8 + 16 s, then 30 s apart: about ten minutes); then the trajectory fails as an infrastructure failure.
 */
export const ENV_STEP_ATTEMPTS = 25;

/**
 * Thrown by a turn activity (generation and env step in one call) whose env step used up ENV_STEP_ATTEMPTS: the
 * activity itself retries without limit, as a generation does, so the step's own budget is kept here.
 */
export class EnvStepAttemptsExhaustedError extends Error {
  override readonly name = 'EnvStepAttemptsExhaustedError';
}

/** Failure types no retry policy should retry: the same input grows the same payload again, or a budget is spent. */
export const NON_RETRYABLE_ACTIVITY_ERRORS = [PayloadTooLargeError.name, EnvStepAttemptsExhaustedError.name];
