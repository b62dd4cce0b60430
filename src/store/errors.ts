/** Errors of the sample store. The class name is the Temporal failure type retry policies match. */

/** Thrown when a key names nothing in the store: retrying cannot make it appear. */
export class SampleNotFoundError extends Error {
  override readonly name = 'SampleNotFoundError';
}

/** Thrown when a key is malformed (empty, absolute, "..", odd characters): a bug in the caller. */
export class InvalidKeyError extends Error {
  override readonly name = 'InvalidKeyError';
}

/** Thrown when a write finds the disk full (ENOSPC, or a quota): retryable, the run waits until space is freed. Names the path. */
export class DiskFullError extends Error {
  override readonly name = 'DiskFullError';
}

/** Thrown when an object's body does not match the digest it was written with (or carries none): reading it again returns the same damage. */
export class ObjectCorruptError extends Error {
  override readonly name = 'ObjectCorruptError';
}

export const NON_RETRYABLE_STORE_ERRORS = [SampleNotFoundError.name, InvalidKeyError.name, ObjectCorruptError.name];
