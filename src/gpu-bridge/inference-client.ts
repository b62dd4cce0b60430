/**
 * Typed calls to one inference server (python-engines --role inference, or any
 * server speaking the same protocol). Generation is always streamed, so the
 * tokens received survive the call being cut.
 */
import {
  ChatCompletionChunkSchema,
  CompletionChunkSchema,
  ChatContinuationResponseSchema,
  EngineStateSchema,
  PauseResponseSchema,
  UpdateWeightsResponseSchema,
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  type ChatContinuationRequest,
  type ChatContinuationResponse,
  type CompletionChunk,
  type CompletionRequest,
  type EngineState,
  type PauseRequest,
  type PauseResponse,
  type UpdateWeightsRequest,
  type UpdateWeightsResponse,
} from './contracts/inference';
import { callChecked, streamChecked, type RequestOptions } from './http';

// Generation may legitimately wait a long time: a paused server holds requests until it resumes.
const GENERATE_TIMEOUT_MS = 60 * 60_000;
// But a waiting stream is never silent: the servers send a keep-alive comment every 5 s (python-engines
// roles/inference/api.py SSE_KEEPALIVE_S), so a minute without a byte is a hung server, failed over like a dead one.
const STREAM_IDLE_TIMEOUT_MS = 60_000;

export class InferenceClient {
  constructor(readonly baseUrl: string) {}

  /** A streamed completion: each chunk (new tokens per choice) reaches `onChunk` while the generation runs. */
  streamComplete(req: CompletionRequest, onChunk: (c: CompletionChunk) => void, opts: RequestOptions = {}): Promise<void> {
    return streamChecked(this.baseUrl, '/v1/completions', CompletionChunkSchema, onChunk, { timeoutMs: GENERATE_TIMEOUT_MS, idleTimeoutMs: STREAM_IDLE_TIMEOUT_MS, ...opts, body: { ...req, stream: true } });
  }

  /** A streamed chat completion; the first chunk carries the templated prompt's token ids. */
  streamChat(req: ChatCompletionRequest, onChunk: (c: ChatCompletionChunk) => void, opts: RequestOptions = {}): Promise<void> {
    return streamChecked(this.baseUrl, '/v1/chat/completions', ChatCompletionChunkSchema, onChunk, { timeoutMs: GENERATE_TIMEOUT_MS, idleTimeoutMs: STREAM_IDLE_TIMEOUT_MS, ...opts, body: { ...req, stream: true } });
  }

  /** Token ids that follow a generated assistant turn: its end, the new turns, the next assistant header. */
  continuation(req: ChatContinuationRequest, opts: RequestOptions = {}): Promise<ChatContinuationResponse> {
    return callChecked(this.baseUrl, '/v1/chat/continuation', ChatContinuationResponseSchema, { ...opts, body: req });
  }

  /** Weight sync, step 1: abort (partial rollout) or wait for (drain) in-flight requests; new ones are held. */
  pause(req: PauseRequest, opts: RequestOptions = {}): Promise<PauseResponse> {
    return callChecked(this.baseUrl, '/pause', PauseResponseSchema, { timeoutMs: GENERATE_TIMEOUT_MS, ...opts, body: req });
  }

  /** Weight sync, step 2: load version n+1 (only while paused). */
  updateWeights(req: UpdateWeightsRequest, opts: RequestOptions = {}): Promise<UpdateWeightsResponse> {
    return callChecked(this.baseUrl, '/update_weights', UpdateWeightsResponseSchema, { timeoutMs: 10 * 60_000, ...opts, body: req });
  }

  /** Weight sync, step 3: admit held and new requests again. */
  resume(opts: RequestOptions = {}): Promise<EngineState> {
    return callChecked(this.baseUrl, '/resume', EngineStateSchema, { ...opts, body: {} });
  }

  state(opts: RequestOptions = {}): Promise<EngineState> {
    return callChecked(this.baseUrl, '/state', EngineStateSchema, opts);
  }
}
