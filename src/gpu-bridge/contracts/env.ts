/**
 * Wire types of the env role (python-engines `roles/env/contracts.py`);
 * contracts/env/*.json holds one fixture per type.
 *
 * Endpoints: POST /reset ResetRequest -> ResetResponse, POST /step StepRequest
 * -> StepResponse, POST /close CloseRequest -> CloseResponse (idempotent),
 * POST /reward RewardRequest -> RewardResponse. Errors are the shared
 * `{error, problems: [{field, message, given}]}` body: 400 bad input (unknown
 * env, domain or verifier; a bad `config.<key>`), 404 unknown or closed
 * session, 409 step after done or at an index that is neither the next nor a
 * retry of the last, 429 max_sessions open.
 */
import { z } from 'zod';
import { ENV_LOSS_POLICIES } from '../../core';
import { ChatMessageSchema } from './inference';

/** Largest seed: TypeScript numbers carry integers exactly up to here. */
const MAX_SEED = Number.MAX_SAFE_INTEGER;
/** Longest action, response or reference the server accepts (characters). */
const MAX_TEXT = 1_000_000;
/** Open JSON; the keys each env or verifier reports are documented on its side. */
const Info = z.record(z.string(), z.unknown());

export const ResetRequestSchema = z.strictObject({
  env: z.string().min(1).describe('A registered env name, e.g. frozen_lake or arithmetic.'),
  seed: z.number().int().min(0).max(MAX_SEED).describe('The episode is a pure function of (env, seed, config).'),
  config: z.record(z.string(), z.unknown()).optional().describe('Env settings, validated by the env; unknown keys are 400s.'),
  restore: z.string().min(1).optional().describe("A snapshot id from an earlier step's info.snapshot: the episode continues from it (404 when it is gone, 400 snapshot_corrupt when its bytes are damaged)."),
  index: z.number().int().min(0).max(MAX_SEED).optional().describe("With restore: how many of the episode's actions the snapshot holds, so the session's first /step carries this index."),
});

export const ResetResponseSchema = z.strictObject({
  session: z.string().describe('Id to pass to /step and /close.'),
  observation: z.string(),
  messages: z
    .array(ChatMessageSchema)
    .optional()
    .describe("The first turn's chat messages, sent to the model in place of one user message of observation (BaseEnv.first_messages: swe_lite's tools message with actions: tool_calls). Absent when the env sends none."),
  info: Info.describe('frozen_lake: turn, max_turns, success, position, map, legal_actions; arithmetic: turn, max_turns, success, question.'),
  on_env_loss: z.enum(ENV_LOSS_POLICIES).optional().describe("The env's declared on_env_loss (BaseEnv.on_env_loss): what a client does when the server loses the session. Absent from servers older than it."),
  step_timeout_s: z.number().positive().describe("Longest one /step of this session runs by the env's own limits (BaseEnv.step_timeout_s): the client waits longer than this before it retries."),
});

export const StepRequestSchema = z.strictObject({
  session: z.string().min(1),
  index: z.number().int().min(0).max(MAX_SEED).describe('How many actions the session applied before this one: each index is applied once, a retry of the last gets its recorded answer.'),
  action: z.string().max(MAX_TEXT).describe("The model's raw reply; unreadable text is an invalid action, not an error."),
});

export const StepResponseSchema = z.strictObject({
  observation: z.string(),
  reward: z.number(),
  done: z.boolean(),
  info: Info.describe("Always has invalid_action, turn and success; plus the env's own keys."),
});

export const CloseRequestSchema = z.strictObject({
  session: z.string().min(1),
});

export const CloseResponseSchema = z.strictObject({
  closed: z.literal(true),
});

export const RewardRequestSchema = z.strictObject({
  domain: z.string().min(1).describe("The sample's domain tag; picks the verifier from the server's domains option."),
  prompt: z.string().max(MAX_TEXT).optional(),
  response: z.string().max(MAX_TEXT),
  reference: z.string().max(MAX_TEXT),
  verifier: z.string().min(1).optional().describe("Use this verifier (exact_match | math_verify | code_exec | llm_judge) instead of the domain's."),
  config: z.record(z.string(), z.unknown()).optional().describe('Verifier settings, validated by the verifier.'),
});

export const RewardResponseSchema = z.strictObject({
  reward: z.number(),
  info: Info.describe('Always has verifier, domain and timeout; error when the verifier failed or timed out.'),
});

export type ResetRequest = z.infer<typeof ResetRequestSchema>;
export type ResetResponse = z.infer<typeof ResetResponseSchema>;
export type StepRequest = z.infer<typeof StepRequestSchema>;
export type StepResponse = z.infer<typeof StepResponseSchema>;
export type CloseRequest = z.infer<typeof CloseRequestSchema>;
export type CloseResponse = z.infer<typeof CloseResponseSchema>;
export type RewardRequest = z.infer<typeof RewardRequestSchema>;
export type RewardResponse = z.infer<typeof RewardResponseSchema>;

export const ENV_CONTRACTS: Record<string, z.ZodType> = {
  ResetRequest: ResetRequestSchema,
  ResetResponse: ResetResponseSchema,
  StepRequest: StepRequestSchema,
  StepResponse: StepResponseSchema,
  CloseRequest: CloseRequestSchema,
  CloseResponse: CloseResponseSchema,
  RewardRequest: RewardRequestSchema,
  RewardResponse: RewardResponseSchema,
};
