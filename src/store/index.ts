export { InvalidKeyError, NON_RETRYABLE_STORE_ERRORS, SampleNotFoundError } from './errors';
export { checkKey, type SampleStore } from './store';
export { DirectorySampleStore } from './directory';
