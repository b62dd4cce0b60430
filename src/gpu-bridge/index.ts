export { EngineRejectedError, EngineUnavailableError, NON_RETRYABLE_ENGINE_ERRORS } from './errors';
export { requestJson, type RequestOptions } from './http';
export { engineHealth, type EngineHealth, type EngineRole, type EngineTarget } from './engines';
export { EnvClient } from './env-client';
export { generateToCompletion, appendSpans, GenerationAbortedTooOftenError, type Completion, type CompletionCall, type Generation, type VersionSpan } from './continuation';
export { InferencePool, type Lease } from './pool';
