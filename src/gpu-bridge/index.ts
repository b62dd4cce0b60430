export { EngineRejectedError, EngineUnavailableError, NON_RETRYABLE_ENGINE_ERRORS } from './errors';
export { requestJson, type RequestOptions } from './http';
export { engineHealth, type EngineHealth, type EngineRole, type EngineTarget } from './engines';
