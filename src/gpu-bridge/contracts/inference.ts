/**
 * Wire types of the inference role (python-engines `roles/inference/contracts.py`);
 * contracts/inference/*.json holds one fixture per type.
 *
 * Endpoints: POST /v1/completions CompletionRequest -> CompletionResponse,
 * POST /v1/chat/completions ChatCompletionRequest -> ChatCompletionResponse,
 * POST /pause PauseRequest -> PauseResponse, POST /resume -> EngineState,
 * POST /update_weights UpdateWeightsRequest -> UpdateWeightsResponse (only
 * while paused), GET /state -> EngineState, GET /metrics (Prometheus text).
 * Errors are the shared `{error, problems: [{field, message, given}]}` body:
 * 400 bad input, 404 update_weights path missing, 409 update_weights while
 * not paused (field `state`), and 409 VersionBehind (code version_behind)
 * for a generation whose min_version is above the loaded weights.
 *
 * With `stream: true` both generate endpoints answer with server-sent events:
 * `data: <CompletionChunk | ChatCompletionChunk>` per batch of new tokens
 * (the chat stream's first chunk carries prompt_token_ids and no choices),
 * then `data: [DONE]`; a failure after the stream started is an
 * `event: error` with `{error}`.
 *
 * Logprobs: one per generated token, the sampled token's logprob under
 * softmax(logits / temperature) before top-p truncation (temperature 0 uses 1).
 * A request that arrives while the server is paused waits until /resume.
 */
import { z } from 'zod';

const TokenId = z.number().int().min(0);
const FinishReason = z.enum(['stop', 'length', 'abort']);
const PauseMode = z.enum(['abort', 'keep', 'wait']);

/** Sampling settings shared by completions and chat completions; defaults are the server's. */
const samplingFields = {
  model: z.string().nullable().optional().describe('Echoed back in the response.'),
  max_tokens: z.number().int().min(1).optional().describe('Default 16; at most the server option max_tokens_cap.'),
  temperature: z.number().min(0).optional().describe('Default 1; 0 = greedy.'),
  top_p: z.number().gt(0).max(1).optional(),
  top_k: z.number().int().min(-1).optional().describe('The k most likely tokens only; -1: no top-k.'),
  seed: z.number().int().nullable().optional().describe('Sample i uses a generator derived from (seed, i).'),
  logprobs: z.union([z.number().int(), z.boolean()]).nullable().optional().describe('Accepted; logprobs are always returned.'),
  stop_token_ids: z.array(TokenId).optional().describe('Stop after emitting one of these (included in token_ids).'),
  ignore_eos: z.boolean().optional(),
  n: z.number().int().min(1).optional().describe('Samples of the prompt, one choice each; at most the server option max_n.'),
  sim_response_length: z.number().int().min(1).nullable().optional().describe('sim backend only; others answer 400.'),
  stream: z.boolean().optional().describe('Answer with server-sent events (chunks of new tokens), then [DONE].'),
  min_version: z.number().int().min(0).nullable().optional().describe('Refused (409 VersionBehind) by a server with older weights loaded.'),
};

export const CompletionRequestSchema = z.strictObject({
  ...samplingFields,
  prompt: z.array(TokenId).min(1).describe('Prompt as token ids.'),
});

export const VersionSpanSchema = z.strictObject({
  version: z.number().int(),
  start: z.number().int().min(0),
  end: z.number().int().min(0).describe('Exclusive.'),
});

export const UsageSchema = z.strictObject({
  prompt_tokens: z.number().int().min(0),
  completion_tokens: z.number().int().min(0),
  total_tokens: z.number().int().min(0),
});

export const CompletionChoiceSchema = z.strictObject({
  index: z.number().int().min(0),
  token_ids: z.array(z.number().int()),
  logprobs: z.array(z.number()).describe('One per token of token_ids.'),
  finish_reason: FinishReason,
  version_spans: z.array(VersionSpanSchema).describe('Which weight version produced tokens [start, end).'),
  text: z.string().nullable().optional().describe('Decoded token_ids (torch, vllm); null for sim.'),
});

export const CompletionResponseSchema = z.strictObject({
  id: z.string(),
  object: z.literal('text_completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(CompletionChoiceSchema),
  usage: UsageSchema,
});

export const ChatMessageSchema = z.strictObject({
  role: z.string().min(1),
  content: z.string(),
});

export const ChatCompletionRequestSchema = z.strictObject({
  ...samplingFields,
  messages: z.array(ChatMessageSchema).min(1).describe('The server applies the chat template.'),
});

export const ChatCompletionChoiceSchema = z.strictObject({
  index: z.number().int().min(0),
  message: z.strictObject({ role: z.literal('assistant'), content: z.string().nullable() }),
  token_ids: z.array(z.number().int()),
  logprobs: z.array(z.number()),
  finish_reason: FinishReason,
  version_spans: z.array(VersionSpanSchema),
});

export const ChatCompletionResponseSchema = z.strictObject({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number().int(),
  model: z.string(),
  prompt_token_ids: z.array(z.number().int()).describe('The templated prompt exactly as the model saw it.'),
  choices: z.array(ChatCompletionChoiceSchema),
  usage: UsageSchema,
});

const chunkFields = {
  token_ids: z.array(z.number().int()),
  logprobs: z.array(z.number()),
  finish_reason: FinishReason.nullable().describe("Set on the choice's last chunk."),
  version_spans: z.array(VersionSpanSchema).describe('Positions within the whole choice, of these tokens only.'),
};

export const CompletionChunkSchema = z.strictObject({
  id: z.string(),
  object: z.literal('text_completion.chunk'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(z.strictObject({ index: z.number().int().min(0), ...chunkFields, text: z.string().nullable().optional() })),
});

export const ChatCompletionChunkSchema = z.strictObject({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.number().int(),
  model: z.string(),
  prompt_token_ids: z.array(z.number().int()).nullable().optional().describe('Only on the first chunk.'),
  choices: z.array(z.strictObject({ index: z.number().int().min(0), delta: z.strictObject({ role: z.literal('assistant'), content: z.string().nullable() }), ...chunkFields })),
});

export const VersionBehindSchema = z.strictObject({
  error: z.string(),
  code: z.literal('version_behind'),
  version: z.number().int().describe('The version loaded now.'),
  min_version: z.number().int(),
  problems: z.array(z.strictObject({ field: z.string(), message: z.string(), given: z.unknown() })),
});

export const ChatContinuationRequestSchema = z.strictObject({
  history: z.array(ChatMessageSchema).min(2).describe('The conversation so far, ending with the assistant turn just generated.'),
  messages: z.array(ChatMessageSchema).min(1).describe("The new turns (e.g. the env's observation)."),
});

export const ChatContinuationResponseSchema = z.strictObject({
  token_ids: z.array(z.number().int()).describe("Ids to append after the assistant turn's generated ids."),
});

export const PauseRequestSchema = z.strictObject({
  mode: PauseMode.describe('abort: in-flight requests return now (finish_reason abort, partial tokens); keep: frozen until /resume; wait: /pause returns once they finish.'),
});

export const PauseResponseSchema = z.strictObject({
  mode: PauseMode,
  aborted: z.number().int().min(0),
  frozen: z.number().int().min(0),
  version: z.number().int(),
});

export const UpdateWeightsRequestSchema = z.strictObject({
  path: z.string().min(1).describe("A directory the trainer's /export_weights wrote, on the server host, or its s3://<bucket>/<prefix>/v<N> ref in the object store (pulled, verified, then loaded)."),
  version: z.number().int().min(0).describe('Reported in version_spans from now on.'),
});

export const UpdateWeightsResponseSchema = z.strictObject({
  version: z.number().int(),
  previous_version: z.number().int(),
  load_seconds: z.number().min(0),
});

export const EngineStateSchema = z.strictObject({
  backend: z.string(),
  model: z.string(),
  version: z.number().int(),
  paused: z.boolean(),
  pause_mode: PauseMode.nullable(),
  running: z.number().int().min(0).describe('Sequences (one per choice) in the running batch.'),
  waiting: z.number().int().min(0).describe('Sequences accepted but not yet running.'),
  max_batch: z.number().int().min(1),
});

export type CompletionRequest = z.infer<typeof CompletionRequestSchema>;
export type VersionSpan = z.infer<typeof VersionSpanSchema>;
export type Usage = z.infer<typeof UsageSchema>;
export type CompletionChoice = z.infer<typeof CompletionChoiceSchema>;
export type CompletionResponse = z.infer<typeof CompletionResponseSchema>;
export type ChatMessage = z.infer<typeof ChatMessageSchema>;
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;
export type ChatCompletionChoice = z.infer<typeof ChatCompletionChoiceSchema>;
export type ChatCompletionResponse = z.infer<typeof ChatCompletionResponseSchema>;
export type CompletionChunk = z.infer<typeof CompletionChunkSchema>;
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunkSchema>;
export type ChatContinuationRequest = z.infer<typeof ChatContinuationRequestSchema>;
export type ChatContinuationResponse = z.infer<typeof ChatContinuationResponseSchema>;
export type PauseRequest = z.infer<typeof PauseRequestSchema>;
export type PauseResponse = z.infer<typeof PauseResponseSchema>;
export type UpdateWeightsRequest = z.infer<typeof UpdateWeightsRequestSchema>;
export type UpdateWeightsResponse = z.infer<typeof UpdateWeightsResponseSchema>;
export type EngineState = z.infer<typeof EngineStateSchema>;

export const INFERENCE_CONTRACTS: Record<string, z.ZodType> = {
  ChatContinuationRequest: ChatContinuationRequestSchema,
  ChatContinuationResponse: ChatContinuationResponseSchema,
  CompletionRequest: CompletionRequestSchema,
  CompletionResponse: CompletionResponseSchema,
  ChatCompletionRequest: ChatCompletionRequestSchema,
  ChatCompletionResponse: ChatCompletionResponseSchema,
  CompletionChunk: CompletionChunkSchema,
  ChatCompletionChunk: ChatCompletionChunkSchema,
  VersionBehind: VersionBehindSchema,
  PauseRequest: PauseRequestSchema,
  PauseResponse: PauseResponseSchema,
  UpdateWeightsRequest: UpdateWeightsRequestSchema,
  UpdateWeightsResponse: UpdateWeightsResponseSchema,
  EngineState: EngineStateSchema,
};
