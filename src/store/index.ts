export { DiskFullError, InvalidKeyError, NON_RETRYABLE_STORE_ERRORS, SampleNotFoundError } from './errors';
export { appendFileDurable, cleanStaleTemps, writeFileDurable } from './durable';
export { checkKey, type SampleStore } from './store';
export { DirectorySampleStore } from './directory';
