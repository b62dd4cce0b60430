export { EngineBusyError, EngineRejectedError, EngineUnavailableError, EngineVersionBehindError, isServerLost, NON_RETRYABLE_ENGINE_ERRORS, TokenizationDriftError, TrainerHeldError, TrainerRecoveryError } from './errors';
export { requestJson, type RequestOptions } from './http';
export { engineHealth, type EngineHealth, type EngineRole, type EngineTarget } from './engines';
export { EnvClient, STEP_TIMEOUT_MARGIN_MS, stepTimeoutMs } from './env-client';
export {
  appendDelta,
  appendSpans,
  emptyGeneration,
  generateToCompletion,
  GenerationAbortedTooOftenError,
  type CompletionCall,
  type CompletionDelta,
  type FinishReason,
  type Generation,
  type PartialGeneration,
  type StreamedCompletion,
  type VersionSpan,
} from './continuation';
export { InferencePool, type Lease } from './pool';
export { InferenceRouter, type WeightsTarget } from './router';
export { HealthProber } from './health-prober';
export { InferenceClient } from './inference-client';
export { TrainerClient } from './trainer-client';
export { callChecked } from './http';
export type { ChatMessage } from './contracts/inference';
