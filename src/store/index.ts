export { DiskFullError, InvalidKeyError, NON_RETRYABLE_STORE_ERRORS, ObjectCorruptError, SampleNotFoundError } from './errors';
export { appendFileDurable, cleanStaleTemps, writeFileDurable } from './durable';
export { checkKey, getIfPresent, type SampleStore } from './store';
export { DirectorySampleStore } from './directory';
export { S3SampleStore, MULTIPART_BYTES, type S3Location } from './s3';
export { openSampleStore } from './open';
