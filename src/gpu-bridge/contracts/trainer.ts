/**
 * Wire types of the trainer role (python-engines `roles/trainer/contracts.py`);
 * contracts/trainer/*.json holds one fixture per type.
 *
 * Endpoints: POST /train_step TrainStepRequest -> TrainStepResponse,
 * POST /logprobs LogprobsRequest -> LogprobsResponse, POST /save SaveRequest ->
 * SaveResponse, POST /load LoadRequest -> LoadResponse, POST /export_weights
 * ExportWeightsRequest -> ExportWeightsResponse, GET /metrics (Prometheus text).
 * Errors are the shared `{error, problems: [{field, message, given}]}` body:
 * 400 bad input (field e.g. `batch[3].old_logprobs`, `pg_variant`), 404 missing
 * `batch_ref` file or checkpoint `path`, 409 `step` (another train step is
 * running, or the step is not the trainer's next one) or `version` (export
 * label differs from the trainer's version).
 *
 * Versions: the trainer's version counts train steps applied to its weights.
 * Train step `step` = k requires version k and yields version k + 1; repeating
 * step k with the same batch (same uids in order) returns the recorded
 * response with `replayed: true` and trains nothing.
 *
 * Logprobs: log softmax(logits / temperature) of each response token given
 * prompt + the preceding response tokens, before top-p truncation; temperature
 * 0 uses 1 — the inference role's convention. `old_logprobs` are the inference
 * server's (behaviour policy); the trainer recomputes the current policy's.
 */
import { z } from 'zod';

const TokenIds = z.array(z.number().int().min(0)).min(1);

export const VersionSpanSchema = z.strictObject({
  version: z.number().int().describe('Policy version that generated these tokens.'),
  start: z.number().int().min(0).describe('First response-token index of the span.'),
  end: z.number().int().min(0).describe('One past the last response-token index (exclusive).'),
});

export const SampleSchema = z.strictObject({
  uid: z.string().min(1).describe('Unique id; a uid enters at most one batch.'),
  group_id: z.string().min(1).describe('Prompt group (GRPO group) the sample belongs to.'),
  prompt_ids: TokenIds.describe('Prompt token ids (chat template applied).'),
  response_ids: TokenIds.describe('Response token ids; multi-turn responses include env tokens, masked by loss_mask.'),
  old_logprobs: z.array(z.number()).describe('Behaviour-policy (inference server) logprob of each response token; same length as response_ids.'),
  reward: z.number().describe('Scalar reward of the whole response.'),
  loss_mask: z.array(z.union([z.literal(0), z.literal(1)])).nullable().optional().describe('1 = the token counts in the loss; default all 1.'),
  versions: z.array(z.number().int()).nullable().optional().describe('Policy version that generated each response token.'),
  version_spans: z.array(VersionSpanSchema).nullable().optional().describe('Policy version per span of response tokens.'),
});

const NormLevel = z.enum(['group', 'batch', 'none']);

/** The run a call belongs to: a trainer holding another run, or none (restarted), refuses (409 trainer_held / trainer_behind). */
const RunId = z.string().min(1).nullable().optional();

export const TrainStepRequestSchema = z.strictObject({
  step: z.number().int().min(0).describe("0-based step; must equal the trainer's version."),
  run_id: RunId,
  batch: z.array(SampleSchema).nullable().optional().describe('The samples, inline; give batch or batch_ref.'),
  batch_ref: z.string().min(1).nullable().optional().describe('Path of a .jsonl (one Sample a line) or .json (array, or {"samples": [...]}) file on the trainer host, or the s3:// ref of such an object (read with the standard AWS variables and files, verified against its sha256 metadata).'),
  pg_variant: z.string().optional().describe('Run config pg_variant; default ppo: vanilla | ppo | decoupled_ppo | tis | cispo | topr | gspo | clip_cov | kl_cov.'),
  adv_estimator: z.string().optional().describe('Run config adv_estimator; default grpo: grpo | reinforce | rloo | reinforce_plus_plus_baseline | gae (value head).'),
  reward_norm: z.string().optional().describe('Run config reward_norm, applied once before the estimator; default: the estimator\'s own.'),
  norm_mean_type: NormLevel.nullable().optional().describe('ROLL reward normalisation: mean level; with norm_std_type it replaces reward_norm.'),
  norm_std_type: NormLevel.nullable().optional().describe('ROLL reward normalisation: std level.'),
  dual_clip_loss: z.boolean().optional().describe('ROLL dual clip switch; without dual_clip, c = 1 + 2·pg_clip.'),
  tis_lower_bound: z.number().min(0).optional().describe('tis: lower clip of the IS ratio; default 0.'),
  tis_upper_bound: z.number().gt(0).optional().describe('tis: upper clip c of the IS ratio; default 1.'),
  cispo_epsilon_low: z.number().min(0).max(1).optional().describe('cispo: ratio clipped below at 1 − ε_low; default 0.1.'),
  cispo_epsilon_high: z.number().min(0).optional().describe('cispo: ratio clipped above at 1 + ε_high; default 0.1.'),
  topr_positive_weight: z.number().min(0).optional().describe('topr: weight of positive-reward samples; default 1.'),
  topr_negative_weight: z.number().min(0).optional().describe('topr: weight of the other samples; default 1.'),
  behav_imp_weight_cap: z.number().gt(1).nullable().optional().describe('decoupled_ppo: tokens whose behaviour weight π_prox/π_old exceeds the cap are dropped; default 5, null: no cap.'),
  train_infer_correction: z
    .strictObject({
      is_weight: z
        .strictObject({
          enabled: z.boolean().optional(),
          weight_type: z.enum(['token', 'sequence']).optional(),
          upper_bound: z.number().gt(0).nullable().optional(),
        })
        .optional(),
      filters: z
        .array(
          z.strictObject({
            enabled: z.boolean().optional(),
            agg_type: z.enum(['token', 'sequence', 'geometric']).optional(),
            ratio_low: z.number().min(0).optional(),
            ratio_high: z.number().gt(0).optional(),
          }),
        )
        .optional(),
    })
    .optional()
    .describe('Truncated IS weight min(π_train/π_infer, C) and rejection filters against the train/infer mismatch.'),
  use_kl_loss: z.boolean().optional().describe('Add β·KL(π_θ ‖ π_ref) to the loss, π_ref the initial weights.'),
  kl_loss_coef: z.number().min(0).optional().describe('β; default 0.'),
  kl_loss_type: z.enum(['k1', 'k2', 'k3', 'low_var_kl']).optional().describe('KL estimator; default k3.'),
  add_token_level_kl: z.boolean().optional().describe('Fold β·KL(π ‖ π_ref) into the reward; default false.'),
  init_kl_coef: z.number().min(0).optional().describe('β of the KL in the reward; default 0.2.'),
  kl_penalty: z.enum(['kl', 'abs', 'mse', 'low_var_kl']).optional().describe('Estimator of the KL in the reward; default kl.'),
  entropy_loss_coef: z.number().min(0).optional().describe('Entropy bonus coefficient; default 0.'),
  gamma: z.number().min(0).max(1).optional().describe('gae: discount; default 1.'),
  lambd: z.number().min(0).max(1).optional().describe('gae: λ; default 0.95.'),
  value_loss_coef: z.number().min(0).optional().describe('gae: value loss coefficient; default 0.5.'),
  value_clip: z.number().gt(0).nullable().optional().describe('gae: value clip; null disables it.'),
  whiten_advantages: z.boolean().optional().describe('Whiten advantages over the batch; default false.'),
  ppo_epochs: z.number().int().min(1).optional(),
  pg_clip: z.number().gt(0).optional().describe('PPO clip ε for both sides unless pg_clip_low/high are set; default 0.2.'),
  pg_clip_low: z.number().gt(0).lt(1).nullable().optional(),
  pg_clip_high: z.number().gt(0).nullable().optional(),
  dual_clip: z.number().gt(1).nullable().optional().describe('Dual-clip constant c > 1; null disables it.'),
  loss_agg_mode: z.enum(['token_mean', 'seq_mean_token_mean', 'seq_mean_token_sum', 'seq_mean_token_sum_norm']).optional(),
  loss_scale_factor: z.number().gt(0).nullable().optional().describe('seq_mean_token_sum_norm: the constant C; null: the batch\'s longest response.'),
  clip_cov_ratio: z.number().gt(0).max(1).optional(),
  clip_cov_lb: z.number().optional(),
  clip_cov_ub: z.number().optional(),
  kl_cov_ratio: z.number().gt(0).max(1).optional(),
  ppo_kl_coef: z.number().min(0).optional(),
  temperature: z.number().min(0).optional().describe('Rollout sampling temperature; 0 means 1 for logprobs.'),
  adv_eps: z.number().gt(0).optional(),
  adv_baseline: z.enum(['group_mean', 'none']).optional().describe('reinforce: subtract the group mean; default group_mean.'),
});

export const TrainStepResponseSchema = z.strictObject({
  step: z.number().int().min(0),
  version: z.number().int().min(0).describe('Version of the weights after the step (step + 1).'),
  replayed: z.boolean().describe('True when the step had already been trained and its recorded response is returned.'),
  metrics: z
    .record(z.string(), z.number())
    .describe('losses/pg_loss, losses/total, actor/clipfrac, actor/approxkl, actor/ratio_mean, grad_norm, tokens, samples, advantages/mean, rewards/mean, timing/train_s, …'),
});

export const TokenSequenceSchema = z.strictObject({
  prompt_ids: TokenIds,
  response_ids: TokenIds.describe('Tokens whose logprobs are wanted.'),
});

export const LogprobsRequestSchema = z.strictObject({
  sequences: z.array(TokenSequenceSchema).min(1),
  temperature: z.number().min(0).optional().describe('Default 1; 0 means 1.'),
});

export const LogprobsResponseSchema = z.strictObject({
  logprobs: z.array(z.array(z.number())).describe('Per sequence, one logprob per response token.'),
  version: z.number().int().min(0).describe('Version of the weights that computed them.'),
});

const CheckpointPath = z.string().min(1).describe('Checkpoint directory on the trainer host, or an s3://<bucket>/<key> ref in the object store (python-engines roles/trainer/store_states.py).');

export const ResetRequestSchema = z.strictObject({ run_id: RunId.describe('The run that now holds the trainer.') });
export const ResetResponseSchema = z.strictObject({ version: z.number().int().min(0) });
export const SaveRequestSchema = z.strictObject({
  path: CheckpointPath,
  version: z.number().int().min(0).nullable().optional().describe('The version meant; the trainer refuses to save another (a restarted trainer never saves its launch weights as step n).'),
  run_id: RunId,
  export_hf: z.boolean().optional().describe('Also write the policy as a Hugging Face directory, <path>/hf, that from_pretrained loads (checkpoints; a backend without weights writes none).'),
});
export const SaveResponseSchema = z.strictObject({ path: z.string(), version: z.number().int().min(0) });
export const LoadRequestSchema = z.strictObject({ path: CheckpointPath, run_id: RunId.describe('The run that holds the trainer after the load.') });
export const LoadResponseSchema = z.strictObject({
  path: z.string(),
  version: z.number().int().min(0).describe('Restored version; the next train step is this number.'),
});

export const ExportWeightsRequestSchema = z.strictObject({
  version: z.number().int().min(0).describe("Must equal the trainer's version."),
  run_id: RunId,
});

/** GET /status: what the trainer holds, so a run can tell a restarted trainer (run_id null, launch weights) from its own. */
export const TrainerStateSchema = z.strictObject({
  run_id: z.string().nullable(),
  version: z.number().int().min(0),
  busy_step: z.number().int().min(0).nullable(),
  backend: z.string(),
});

export const ExportWeightsResponseSchema = z.strictObject({
  path: z.string().describe('<export_dir>/v<version>: safetensors + config + tokenizer, for the inference role /update_weights; an s3:// ref when export_dir is one.'),
  version: z.number().int().min(0),
});

export type VersionSpan = z.infer<typeof VersionSpanSchema>;
export type Sample = z.infer<typeof SampleSchema>;
export type TrainStepRequest = z.infer<typeof TrainStepRequestSchema>;
export type TrainStepResponse = z.infer<typeof TrainStepResponseSchema>;
export type TokenSequence = z.infer<typeof TokenSequenceSchema>;
export type LogprobsRequest = z.infer<typeof LogprobsRequestSchema>;
export type LogprobsResponse = z.infer<typeof LogprobsResponseSchema>;
export type ResetRequest = z.infer<typeof ResetRequestSchema>;
export type ResetResponse = z.infer<typeof ResetResponseSchema>;
export type SaveRequest = z.infer<typeof SaveRequestSchema>;
export type SaveResponse = z.infer<typeof SaveResponseSchema>;
export type LoadRequest = z.infer<typeof LoadRequestSchema>;
export type LoadResponse = z.infer<typeof LoadResponseSchema>;
export type ExportWeightsRequest = z.infer<typeof ExportWeightsRequestSchema>;
export type ExportWeightsResponse = z.infer<typeof ExportWeightsResponseSchema>;
export type TrainerState = z.infer<typeof TrainerStateSchema>;

export const TRAINER_CONTRACTS: Record<string, z.ZodType> = {
  ResetRequest: ResetRequestSchema,
  ResetResponse: ResetResponseSchema,
  Sample: SampleSchema,
  VersionSpan: VersionSpanSchema,
  TrainStepRequest: TrainStepRequestSchema,
  TrainStepResponse: TrainStepResponseSchema,
  TokenSequence: TokenSequenceSchema,
  LogprobsRequest: LogprobsRequestSchema,
  LogprobsResponse: LogprobsResponseSchema,
  SaveRequest: SaveRequestSchema,
  SaveResponse: SaveResponseSchema,
  LoadRequest: LoadRequestSchema,
  LoadResponse: LoadResponseSchema,
  ExportWeightsRequest: ExportWeightsRequestSchema,
  ExportWeightsResponse: ExportWeightsResponseSchema,
  TrainerState: TrainerStateSchema,
};
