/** Errors of the sample store. The class name is the Temporal failure type retry policies match. */

/** Thrown when a key names nothing in the store: retrying cannot make it appear. */
export class SampleNotFoundError extends Error {
  override readonly name = 'SampleNotFoundError';
}

/** Thrown when a key is malformed (empty, absolute, "..", odd characters): a bug in the caller. */
export class InvalidKeyError extends Error {
  override readonly name = 'InvalidKeyError';
}

export const NON_RETRYABLE_STORE_ERRORS = [SampleNotFoundError.name, InvalidKeyError.name];
