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

/** Failure types no retry policy should retry: the same input grows the same payload again. */
export const NON_RETRYABLE_ACTIVITY_ERRORS = [PayloadTooLargeError.name];
