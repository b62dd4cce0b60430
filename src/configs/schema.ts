/**
 * The run config: one zod schema is the source of truth. Key names follow ROLL
 * where ROLL has them; rollflow's own keys are marked "(rollflow)". Every field
 * carries a one-line description (a unit test checks this). Values computed
 * from these fields live in derive.ts and nowhere else.
 */
import { z } from 'zod';
import { ENV_LOSS_POLICIES } from '../core';
import { loraOf, ModelArgs, sameLora, setsLora } from './model-args';

const count = (min: number) => z.number().int().min(min);
const isLoopbackHost = (host: string) => ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(host);

// ---- algorithms: the names python-engines registers (see python-engines losses/advantages)
export const PG_VARIANTS = ['vanilla', 'ppo', 'decoupled_ppo', 'tis', 'cispo', 'topr', 'gspo', 'clip_cov', 'kl_cov'] as const;
export const ADV_ESTIMATORS = ['grpo', 'reinforce', 'gae', 'rloo', 'reinforce_plus_plus_baseline'] as const;
export const LOSS_AGG_MODES = ['token_mean', 'seq_mean_token_mean', 'seq_mean_token_sum', 'seq_mean_token_sum_norm'] as const;
export const REWARD_NORMS = ['none', 'group', 'batch', 'group_mean_batch_std'] as const;
/** The env server's verifiers a `rewards` entry can name (python-engines rewards/). */
export const REWARD_TYPES = ['exact_match', 'math_verify', 'code_exec', 'llm_judge'] as const;
export const TRACKERS = ['tensorboard', 'wandb', 'stdout'] as const;
/** python-engines' trainer schedules (roles/trainer/schedule.py). */
export const LR_SCHEDULER_TYPES = ['constant', 'constant_with_warmup', 'linear', 'cosine'] as const;
/** Default activity and local-activity slots of one worker (temporal.worker.*); the bench sizes its workers by it. */
export const WORKER_SLOTS = 2000;

// ---- engines (rollflow): where the Python servers are, and whether rollflow starts them
function endpoint<B extends readonly [string, ...string[]]>(backends: B, defaultUrl: string, defaultBackend: B[number]) {
  return endpointShape(backends, defaultBackend).prefault({ url: defaultUrl });
}

/** An endpoint with no default of its own: absent unless configured (engines.judge). */
function endpointShape<B extends readonly [string, ...string[]]>(backends: B, defaultBackend: B[number]) {
  return z
    .strictObject({
      url: z.url({ protocol: /^https?$/ }).describe('Base URL of the server, e.g. http://127.0.0.1:8301.'),
      backend: z.enum(backends).default(defaultBackend as never).describe(`Implementation behind the role: ${backends.join(' | ')}.`),
      launch: z.boolean().default(true).describe('Start this server with `rollflow dev up` (loopback URLs only); false for a server you run yourself.'),
      options: z.record(z.string(), z.unknown()).default({}).describe('Role/backend settings passed to a launched server as --option key=value (see python-engines).'),
    })
    .superRefine((e, ctx) => {
      if (e.launch && URL.canParse(e.url) && !isLoopbackHost(new URL(e.url).hostname)) { // a bad url is reported by url's own check
        ctx.addIssue({ code: 'custom', path: ['url'], message: 'launch: true needs a loopback URL (127.0.0.1, localhost, ::1); set launch: false for a remote server' });
      }
    });
}

export const EnginesSchema = z
  .strictObject({
    inference: z
      .array(endpoint(['sim', 'torch', 'vllm'] as const, 'http://127.0.0.1:8301', 'sim'))
      .min(1)
      .prefault([{ url: 'http://127.0.0.1:8301' }])
      .describe('Inference servers (LLMProxy workers); generate calls are balanced across them.'),
    trainer: endpoint(['sim', 'torch', 'megatron'] as const, 'http://127.0.0.1:8401', 'sim').describe('The trainer server.'),
    env: endpoint(['python'] as const, 'http://127.0.0.1:8501', 'python').describe('The env/reward server for Python-side envs and verifiers.'),
    judge: endpointShape(['sim', 'torch', 'vllm'] as const, 'torch')
      .optional()
      .describe('An inference server that grades responses for the llm_judge verifier (point its verifier_config.url here). `rollflow dev up` starts it like the others, with only its own options (set options.model: the policy\'s model settings never apply to it); it never generates for the run.'),
  })
  .prefault({})
  .describe('(rollflow) The python-engines servers this run uses.');

export const TemporalSchema = z
  .strictObject({
    address: z.string().regex(/^[^:\s]+:\d{1,5}$/, 'host:port').default('127.0.0.1:7233').describe('Temporal frontend gRPC address, host:port.'),
    namespace: z.string().min(1).default('default').describe('Temporal namespace the run lives in.'),
    task_queue: z.string().min(1).default('rollflow').describe('Task queue rollflow workers poll.'),
    embedded: z.boolean().default(true).describe('Start the embedded dev server (temporal/dev-server.sh) when the address is loopback and nothing answers.'),
    ui_url: z.url().default('http://127.0.0.1:8233').describe('Temporal UI base URL, used in printed links; its port is the embedded UI port.'),
    codec_url: z
      .url({ protocol: /^http$/ })
      .optional()
      .describe('(rollflow) The codec server the Temporal UI calls to show payloads (`rollflow codec-server`): it decrypts encrypted payloads and adds each trajectory result\'s transcript from the sample store. `rollflow dev up` starts it on this loopback URL and the embedded dev server\'s UI uses it (a dev server already running keeps its settings until `dev down`). Unset: no codec server.'),
    tls: z
      .strictObject({
        ca_file: z.string().min(1).optional().describe('PEM file of the CA that signed the server\'s certificate (default: the system\'s CAs). Env TEMPORAL_TLS_CA_PATH overrides it.'),
        cert_file: z.string().min(1).optional().describe('PEM file of this client\'s certificate, for mTLS (with key_file). Env TEMPORAL_TLS_CERT_PATH.'),
        key_file: z.string().min(1).optional().describe('PEM file of this client\'s private key, for mTLS (with cert_file). Env TEMPORAL_TLS_KEY_PATH.'),
        server_name: z.string().min(1).optional().describe('The name to check the server\'s certificate against, when it is not the address\'s host. Env TEMPORAL_TLS_SERVER_NAME.'),
      })
      .refine((t) => (t.cert_file === undefined) === (t.key_file === undefined), { message: 'cert_file and key_file go together (mTLS needs both)', path: ['cert_file'] })
      .optional()
      .describe('(rollflow) Connect to Temporal over TLS (present = on), for the CLI, the client library and workers; files only, never key material in the config. Any TEMPORAL_TLS_* variable also turns TLS on.'),
    api_key_file: z.string().min(1).optional().describe('(rollflow) A file holding the API key sent to Temporal (Temporal Cloud); env TEMPORAL_API_KEY (the key itself) overrides it. An API key turns TLS on.'),
    encryption: z
      .strictObject({
        key_file: z.string().min(1).optional().describe('A file holding the 256-bit key, as 64 hex digits or base64.'),
        key_env: z.string().min(1).optional().describe('The name of an environment variable holding the key (64 hex digits or base64).'),
      })
      .refine((e) => (e.key_file === undefined) !== (e.key_env === undefined), { message: 'exactly one of key_file and key_env' })
      .optional()
      .describe('(rollflow) Encrypt every payload (prompts, responses, results) with AES-256-GCM before it reaches Temporal; workers, the CLI and the codec server (temporal.codec_url) decrypt them. Every process of a run needs the same key.'),
    worker: z
      .strictObject({
        max_concurrent_activities: count(1).default(WORKER_SLOTS).describe('Activities one worker runs at once; rollflow\'s wait on engines and envs (I/O, not CPU), and a sleeping env step holds a slot, so this is far above the SDK\'s 100.'),
        max_concurrent_local_activities: count(1).default(WORKER_SLOTS).describe('Local activities one worker runs at once (env calls with env_calls local or auto); the SDK\'s default of 100 would queue the env steps of a large batch.'),
        max_concurrent_workflow_tasks: count(2).optional().describe('Workflow tasks one worker runs at once (SDK default when unset).'),
        max_cached_workflows: count(0).optional().describe('Workflows kept in a worker\'s cache between tasks (SDK default when unset).'),
        max_result_bytes: count(1024)
          .default(1024 * 1024)
          .describe('Largest env reset/step or generation result (its JSON: observation, generated text) a worker hands to Temporal; a larger one fails its group with PayloadTooLargeError instead of a payload the server rejects (above 2 MB) and a retry without end.'),
        metrics_address: z
          .union([z.string().regex(/^[^:\s]+:([1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])$/, 'host:port, port 1-65535'), z.literal('off')])
          .default('127.0.0.1:9464')
          .describe('Where a worker serves Prometheus metrics (/metrics: the run metrics by run id, the process\'s, and the Temporal SDK runtime\'s), host:port, or off. A taken port (a second worker on the host) is a warning, not a failure.'),
        heartbeat_partial_tokens: z
          .boolean()
          .default(true)
          .describe('Each generation heartbeat carries the tokens generated so far, so a generation retried after a crash (of this worker or its server) continues from them; false sends empty beats and a retry starts over from the prompt (it saves the beats\' payload; make bench durability measures both).'),
      })
      .prefault({})
      .describe('Worker capacity.'),
  })
  .prefault({})
  .describe('(rollflow) Connection to the Temporal server.');

// ---- models and generation (ROLL: actor_train / actor_infer); model_args: model-args.ts

export const ActorTrainSchema = z
  .strictObject({
    model_args: ModelArgs.prefault({ model_name_or_path: 'tiny:default' }),
    training_args: z
      .strictObject({
        learning_rate: z.number().positive().default(1e-6).describe('AdamW learning rate.'),
        weight_decay: z.number().min(0).default(0).describe('AdamW weight decay.'),
        per_device_train_batch_size: count(1).default(1).describe('Micro-batch size per forward/backward pass.'),
        gradient_accumulation_steps: count(1).optional().describe('Micro-batches accumulated before one optimizer step; unset: one optimizer step per pass over the batch.'),
        max_grad_norm: z.number().positive().default(1.0).describe('Gradient clipping norm.'),
        lr_scheduler_type: z
          .enum(LR_SCHEDULER_TYPES)
          .default('constant')
          .describe('Learning-rate schedule over train steps (transformers\' names): constant, constant_with_warmup, or linear / cosine decay to 0 at max_steps; every optimizer update of train step k uses step k\'s rate.'),
        warmup_steps: count(0).optional().describe('Train steps of linear warmup from 0 to learning_rate (step 0 trains at rate 0, as in transformers); needs a schedule with warmup.'),
        warmup_ratio: z.number().min(0).max(1).optional().describe('Warmup as a share of max_steps: ⌈warmup_ratio × max_steps⌉ steps (transformers\' rule); not with warmup_steps.'),
      })
      .prefault({})
      .describe('Optimizer settings of the trainer.'),
  })
  .prefault({})
  .describe('The policy being trained (trainer role).');

export const ActorInferSchema = z
  .strictObject({
    model_args: ModelArgs.optional().describe('Model the inference servers load, and its dtype; defaults to actor_train.model_args. LoRA settings always come from actor_train.model_args (the servers apply the trainer\'s adapters): here they may only repeat them.'),
    generating_args: z
      .strictObject({
        max_new_tokens: count(1).default(512).describe('Most tokens generated per response (per turn in agentic envs).'),
        temperature: z.number().min(0).default(1.0).describe('Sampling temperature; 0 is greedy.'),
        top_p: z.number().gt(0).max(1).default(1.0).describe('Nucleus sampling mass.'),
        top_k: z
          .number()
          .int()
          .min(-1)
          .refine((k) => k !== 0, 'top_k 0 keeps no token; -1 disables top-k')
          .default(-1)
          .describe('Sample among the k most likely tokens only (before top_p), on every inference backend (sim: no distribution, ignored); -1 disables it.'),
      })
      .prefault({})
      .describe('Sampling parameters for generation.'),
  })
  .prefault({})
  .describe('The rollout policy (inference role).');

// ---- environments (ROLL: train_env_manager / val_env_manager / custom_envs)
export const EnvManagerSchema = z
  .strictObject({
    num_env_groups: count(1).describe('Env groups run at once for a step; all envs of a group share one seed (GRPO group).'),
    group_size: count(1).describe('Trajectories per env group.'),
    trajectories_per_step: count(1)
      .optional()
      .describe('(rollflow; ROLL\'s rollout_batch_size of agentic runs) Trajectories a step trains on, taken in complete groups: ⌈n / group_size⌉ groups. Default num_env_groups × group_size. Fewer makes the other env groups redundant (ROLL Flash\'s redundant env rollout): the step takes the first groups to complete, so stragglers and failed envs do not hold it; groups still running at the step end carry over under stale_policy, or are cancelled when the run ends.'),
    max_traj_per_env: z
      .number()
      .int()
      .min(-1)
      .optional()
      .describe('ROLL: trajectories one env instance may run before it is recreated. Not a rollflow setting (setting it is an error): every trajectory gets an env session of its own, which is what lets a lost episode be replayed, so no instance is reused.'),
    tags: z.array(z.string().min(1)).min(1).describe('Names of custom_envs entries this manager draws from.'),
    num_groups_partition: z.array(count(1)).optional().describe('Env groups per tag, in the order of tags; must sum to num_env_groups.'),
  })
  .describe('How many env groups of which envs run per step.');

export const CustomEnvSchema = z
  .strictObject({
    env_type: z.string().min(1).describe('Registered env implementation, e.g. frozen_lake or latency_sim.'),
    max_steps: count(1).default(1).describe('Most turns per episode.'),
    max_tokens_per_step: count(1).optional().describe('Most tokens the model may generate per turn; defaults to generating_args.max_new_tokens.'),
    max_tokens_per_episode: count(1)
      .optional()
      .describe('(rollflow) Most tokens the model may generate in one episode, over all its turns: each turn may generate at most what is left, and the episode ends (done, with the reward earned so far) once it is spent. Unset: max_steps × max_tokens_per_step bounds it.'),
    env_config: z.record(z.string(), z.unknown()).default({}).describe('Arguments passed to the env constructor.'),
    env_calls: z
      .enum(['auto', 'activity', 'local'])
      .default('auto')
      .describe('(rollflow) How env reset/step and the sample write run: activity (own task, retried and shown as pending in the UI; for slow envs such as sandboxes), local (a local activity of the trajectory workflow: far less server work, for envs that answer in milliseconds), auto (local in one-request groups, activity in trajectory workflows).'),
    on_env_loss: z
      .enum(ENV_LOSS_POLICIES)
      .optional()
      .describe('(rollflow) When the env server loses an episode (it restarted, or the session expired; while it is unreachable calls wait, about 10 minutes): replay (a fresh session at the same seed, the recorded actions applied again), restart (the episode starts over from turn 0; nothing of the lost one is trained), drop (the trajectory fails as an infrastructure failure, never trained). Default: what the env declares (frozen_lake and arithmetic: replay).'),
  })
  .describe('One env definition, referenced by its key from an env manager tag.');

export const RewardSchema = z
  .strictObject({
    type: z.enum(REWARD_TYPES).describe(`The env server's verifier that scores a response: ${REWARD_TYPES.join(' | ')}.`),
    tag_included: z.array(z.string().min(1)).min(1).describe('Sample domains (a dataset row\'s domain or tag) this reward scores.'),
    config: z.record(z.string(), z.unknown()).optional().describe('The verifier\'s settings, checked by it (e.g. code_exec: { mode: fraction }).'),
  })
  .describe('One reward worker, chosen by the sample\'s domain.');

// ---- algorithm settings passed to every train step (python-engines algorithms/); unset means the trainer's default
const unit = z.number().min(0).max(1);
export const AlgorithmSettings = z.strictObject({
  pg_clip: z.number().gt(0).optional().describe('PPO clip ε (both sides unless pg_clip_low/high are set); trainer default 0.2.'),
  pg_clip_low: z.number().gt(0).lt(1).optional().describe('PPO ratio lower bound 1 − pg_clip_low.'),
  pg_clip_high: z.number().gt(0).optional().describe('PPO ratio upper bound 1 + pg_clip_high (clip-higher when above pg_clip_low).'),
  dual_clip_loss: z.boolean().optional().describe('Dual clip for negative advantages (c = 1 + 2·pg_clip, as ROLL).'),
  loss_agg_mode: z
    .enum(LOSS_AGG_MODES)
    .optional()
    .describe('How per-token losses become one number: token_mean (every token weighs the same), seq_mean_token_mean (every sequence; GRPO), seq_mean_token_sum, seq_mean_token_sum_norm (Dr. GRPO: token sums over a constant, loss_scale_factor). Sequences without loss tokens do not count in the sequence means. Trainer default token_mean.'),
  loss_scale_factor: z.number().gt(0).optional().describe('seq_mean_token_sum_norm: the constant every sequence\'s token sum is divided by (verl\'s name); default actor_infer.generating_args.max_new_tokens.'),
  norm_mean_type: z.enum(['group', 'batch', 'none']).optional().describe('Reward normalisation mean level (ROLL); with norm_std_type it replaces reward_norm.'),
  norm_std_type: z.enum(['group', 'batch', 'none']).optional().describe('Reward normalisation std level (ROLL).'),
  whiten_advantages: z.boolean().optional().describe('Whiten advantages over the batch.'),
  tis_lower_bound: z.number().min(0).optional().describe('tis: lower clip of the IS ratio; default 0.'),
  tis_upper_bound: z.number().gt(0).optional().describe('tis: upper clip c of the IS ratio; default 1.'),
  cispo_epsilon_low: unit.optional().describe('cispo: ratio clipped below at 1 − ε_low; default 0.1.'),
  cispo_epsilon_high: z.number().min(0).optional().describe('cispo: ratio clipped above at 1 + ε_high; default 0.1.'),
  topr_positive_weight: z.number().min(0).optional().describe('topr: weight of positive-reward samples; default 1.'),
  topr_negative_weight: z.number().min(0).optional().describe('topr: weight of the other samples; default 1.'),
  behav_imp_weight_cap: z.number().gt(1).optional().describe('decoupled_ppo: drop tokens whose behaviour weight π_prox/π_old exceeds this cap; default 5.'),
  clip_cov_ratio: z.number().gt(0).max(1).optional().describe('clip_cov: share of loss tokens taken out of the gradient; default 0.0002.'),
  clip_cov_lb: z.number().optional().describe('clip_cov: lower bound of the advantage·logprob covariance band tokens are drawn from; default 1.'),
  clip_cov_ub: z.number().optional().describe('clip_cov: upper bound of that band; default 5.'),
  kl_cov_ratio: z.number().gt(0).max(1).optional().describe('kl_cov: share of loss tokens (largest covariance) given the KL penalty; default 0.0002.'),
  ppo_kl_coef: z.number().min(0).optional().describe('kl_cov: coefficient of |log π_θ/π_old| on those tokens; default 0.1.'),
  train_infer_correction: z
    .strictObject({
      is_weight: z
        .strictObject({
          enabled: z.boolean().default(false).describe('Apply the truncated IS weight min(π_train/π_infer, C).'),
          weight_type: z.enum(['token', 'sequence']).default('token').describe('Per token, or one weight per sequence.'),
          upper_bound: z.number().gt(0).default(5).describe('C.'),
        })
        .prefault({})
        .describe('The truncated importance weight.'),
      filters: z
        .array(
          z
            .strictObject({
              enabled: z.boolean().default(false).describe('Apply this filter.'),
              agg_type: z.enum(['token', 'sequence', 'geometric']).default('token').describe('The ratio tested: each token\'s; the product over the sequence; its geometric mean (sequence and geometric reject whole sequences).'),
              ratio_low: z.number().min(0).default(0.8).describe('Lowest π_train/π_infer kept.'),
              ratio_high: z.number().gt(0).default(1.2).describe('Highest π_train/π_infer kept.'),
            })
            .refine((f) => f.ratio_high >= f.ratio_low, { message: 'ratio_high must be at least ratio_low', path: ['ratio_high'] }),
        )
        .default([])
        .describe('Rejection masks (ROLL): tokens or sequences whose train/infer ratio falls outside [ratio_low, ratio_high] leave the loss, in order.'),
    })
    .optional()
    .describe('Correction for the mismatch between the trainer and inference engines.'),
  use_kl_loss: z.boolean().optional().describe('Add β·KL(π_θ ‖ π_ref) to the loss; π_ref is the initial weights.'),
  kl_loss_coef: z.number().min(0).optional().describe('β of the KL loss; default 0.'),
  kl_loss_type: z.enum(['k1', 'k2', 'k3', 'low_var_kl']).optional().describe('KL estimator: k1, k2 = ½(log ratio)², k3, or low_var_kl (k3 clamped to ±10, verl); default k3.'),
  add_token_level_kl: z.boolean().optional().describe('Fold a KL penalty to the initial weights into the reward before the advantages (ROLL; verl use_kl_in_reward): r − init_kl_coef·Σ_t KL_t.'),
  init_kl_coef: z.number().min(0).optional().describe('β of the KL folded into the reward (fixed); default 0.2.'),
  kl_penalty: z.enum(['kl', 'abs', 'mse', 'low_var_kl']).optional().describe('Estimator of the KL folded into the reward; default kl.'),
  entropy_loss_coef: z.number().min(0).optional().describe('Entropy bonus coefficient; default 0.'),
  gamma: unit.optional().describe('gae: discount γ; default 1.'),
  lambd: unit.optional().describe('gae: λ; default 0.95.'),
  value_loss_coef: z.number().min(0).optional().describe('gae: value loss coefficient; default 0.5.'),
  value_clip: z.number().gt(0).optional().describe('gae: clip of the value update; unset disables it.'),
});

// ---- the run config
export const RunConfigSchema = z
  .strictObject({
    exp_name: z.string().regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" or "-"').default('rollflow').describe('Experiment name; names the run directory.'),
    seed: z.number().int().min(0).default(42).describe('Seed for prompt order, sampling and envs.'),
    max_steps: count(1).default(10).describe('Training steps to run.'),
    save_steps: count(0).default(0).describe('Checkpoint every N steps; 0 saves only at the end.'),
    trainer_state_save_steps: count(0).default(5).describe('(rollflow) Save the trainer\'s state every N steps (and at the start) under <run_dir>/<run id>/trainer-state, so a trainer that restarts is brought back to the run\'s version by itself: the newest saved state is loaded and the stored batches since it are replayed. 0 saves it at the start only (a recovery then replays every step).'),
    eval_steps: count(0).default(0).describe('Validate every N steps; 0 never validates.'),

    rollout_batch_size: count(1).default(8).describe('Prompts per training step (single-turn tasks).'),
    num_return_sequences_in_group: count(1).default(1).describe('Responses sampled per prompt (GRPO group size).'),
    is_num_return_sequences_expand: z.boolean().default(true).describe('Prompt replication: the n responses of a prompt are n independent requests, each sample its own workflow (ROLL defaults to false: one request with n choices; single-turn only).'),
    async_generation_ratio: z.number().min(0).default(0).describe('Async ratio α: samples may be generated up to α steps ahead of training; 0 is synchronous.'),
    generate_opt_level: z
      .literal([0, 1])
      .default(1)
      .describe('1: a queue, each group scored as it finishes and its slot refilled at once (dynamic filtering); 0: waves, a new wave of groups starts only when every group of the last one has reported (generate the batch, score, filter, top up).'),
    max_additional_running_prompts: count(0)
      .default(0)
      .describe('Prompt groups admitted beyond the (1 + α)·B samples, so groups the filter drops are replaced while the batch still generates; with α = 0 the ones still running at the step end become stale (stale_policy).'),

    pg_variant: z.enum(PG_VARIANTS).default('ppo').describe('Policy-gradient loss (off-policy correction) used by the trainer.'),
    adv_estimator: z.enum(ADV_ESTIMATORS).default('grpo').describe('Advantage estimator.'),
    reward_norm: z
      .enum(REWARD_NORMS)
      .optional()
      .describe('How rewards are normalised, once, before the advantage estimator. Unset: the estimator\'s own (grpo, reinforce, gae: group; rloo, reinforce_plus_plus_baseline: none). grpo needs a group mean: norm_std_type none is Dr. GRPO.'),
    ppo_epochs: count(1).default(1).describe('Passes over each batch per training step.'),
    ...AlgorithmSettings.shape,

    actor_train: ActorTrainSchema,
    actor_infer: ActorInferSchema,
    train_env_manager: EnvManagerSchema.optional().describe('Multi-turn envs for training; omit for single-turn tasks.'),
    val_env_manager: EnvManagerSchema.optional().describe('Multi-turn envs for validation.'),
    custom_envs: z.record(z.string(), CustomEnvSchema).default({}).describe('Env definitions by name.'),
    rewards: z
      .record(z.string(), RewardSchema)
      .default({})
      .describe('Reward workers by name; each scores the dataset rows whose domain is in its tag_included (env_type dataset; a dataset env with its own verifier is not routed). A row of a domain no reward includes fails the run at its start.'),
    domain_interleave_probs: z
      .record(z.string(), z.number().min(0).max(1))
      .optional()
      .describe('ROLL: each domain\'s share of every step\'s rollout_batch_size groups, e.g. {math: 0.6, qa: 0.4} (shares ≥ 0 summing to 1). Needs exactly one training env, of env_type dataset; its rows\' domains are the names. Every dispatched block of a step\'s groups gets ⌊B·p⌋ or ⌈B·p⌉ groups of each domain (the fractions carried over blocks, so the long-run share is p), each domain visiting all its rows in a seeded order before any repeats. A domain named that the training rows lack fails the run at its start; rows of a domain not named are never trained (share 0, as in ROLL).'),

    dataset_size: count(1).default(1024).describe('(rollflow) Distinct prompts (env seeds 0..N-1) one epoch visits, in a seeded order.'),
    max_failed_group_ratio: z
      .number()
      .gt(0)
      .max(1)
      .default(0.2)
      .describe('(rollflow) The run stops with RunFailingError once at least 4 groups failed and they are this share of the groups dispatched (a broken env or engine); 1 tolerates any failure short of every group (flaky envs, redundant env rollout). Infrastructure failures (servers down past their retries, on_env_loss drop, timeouts) count too; the message gives both counts.'),
    group_filter: z.enum(['none', 'std']).default('none').describe('(rollflow) std drops groups whose rewards are all equal (no GRPO signal); none keeps every group.'),
    steps_per_workflow_run: count(1).default(20).describe('(rollflow) Training steps per run-workflow execution before continue-as-new keeps its history small.'),
    rollout_mode: z.enum(['env_async', 'lockstep']).default('env_async').describe('(rollflow) env_async: each trajectory proceeds on its own; lockstep: every turn waits for the slowest env of the batch (the synchronous baseline).'),
    partial_rollout: z.boolean().default(true).describe('(rollflow) On a weight update abort generation and continue from the partial tokens; false drains instead.'),
    stale_policy: z.enum(['accept', 'drop', 'restart']).default('drop').describe('(rollflow) What to do with a sample staler than ⌈α⌉ steps at consumption.'),
    temporal: TemporalSchema,
    engines: EnginesSchema,
    sample_store: z
      .strictObject({
        kind: z.enum(['dir']).default('dir').describe('Storage backend: a directory (an S3-compatible bucket is planned).'),
        path: z.string().min(1).optional().describe('Where samples are written; defaults to <run_dir>/samples.'),
      })
      .prefault({})
      .describe('(rollflow) Where token ids, logprobs and observations live; workflows carry only keys.'),
    track_with: z
      .union([z.enum(TRACKERS), z.array(z.enum(TRACKERS)).min(1)])
      .optional()
      .describe(`Experiment trackers that get every step and validation record and the config as hyper-parameters: ${TRACKERS.join(' | ')}, or a list of them. wandb runs in offline mode only (no network): its run directory goes to tracker_kwargs.log_dir (default <run_dir>/<run id>/wandb); tensorboard writes <run_dir>/<run id>/tensorboard (or tracker_kwargs.log_dir); stdout logs a line per record on the worker. A tracker that fails never fails the run.`),
    tracker_kwargs: z
      .strictObject({
        log_dir: z.string().min(1).optional().describe('Where tensorboard writes its event files, and wandb its offline run directory.'),
        project: z.string().min(1).optional().describe('wandb project (default rollflow).'),
        name: z.string().min(1).optional().describe('wandb run name (default: the run id).'),
        notes: z.string().optional().describe('wandb run notes.'),
        tags: z.array(z.string()).optional().describe('wandb run tags.'),
      })
      .default({})
      .describe('Settings of the trackers in track_with, with ROLL\'s names.'),
    run_dir: z.string().min(1).optional().describe('(rollflow) Directory of the runs of this config, each in its own <run_dir>/<run id> (metrics, validation records, checkpoints), and of the default sample store; defaults to runs/<exp_name> under the working directory.'),
  })
  .superRefine(checkCrossReferences);

type RawRunConfig = z.output<typeof RunConfigSchema>;

/** Checks between fields: env tags exist, partitions add up, domain shares sum to 1. */
function checkCrossReferences(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  for (const key of ['train_env_manager', 'val_env_manager'] as const) {
    const m = c[key];
    if (!m) continue;
    m.tags.forEach((tag, i) => {
      if (!(tag in c.custom_envs)) {
        const known = Object.keys(c.custom_envs);
        ctx.addIssue({ code: 'custom', path: [key, 'tags', i], message: `no custom_envs entry named "${tag}"; defined: ${known.length ? known.join(', ') : '(none)'}` });
      }
    });
    if (m.trajectories_per_step !== undefined && m.trajectories_per_step > m.num_env_groups * m.group_size) {
      ctx.addIssue({ code: 'custom', path: [key, 'trajectories_per_step'], message: `expected at most num_env_groups × group_size = ${m.num_env_groups * m.group_size} (the env groups cannot hold more)` });
    }
    if (m.num_groups_partition) {
      const sum = m.num_groups_partition.reduce((a, b) => a + b, 0);
      if (m.num_groups_partition.length !== m.tags.length || sum !== m.num_env_groups) {
        ctx.addIssue({ code: 'custom', path: [key, 'num_groups_partition'], message: `expected ${m.tags.length} entries (one per tag) summing to num_env_groups = ${m.num_env_groups}` });
      }
    }
  }
  checkRewards(c, ctx);
  checkSchedule(c, ctx);
  checkInterleave(c, ctx);
  checkModelArgs(c, ctx);
  // ROLL keys rollflow does not act on: refused, never accepted and ignored.
  for (const key of ['train_env_manager', 'val_env_manager'] as const) {
    if (c[key]?.max_traj_per_env !== undefined) {
      ctx.addIssue({ code: 'custom', path: [key, 'max_traj_per_env'], message: 'not a rollflow setting: every trajectory gets an env session of its own (so a lost episode can be replayed) and no instance is reused; remove the key' });
    }
  }
  if (c.val_env_manager?.trajectories_per_step !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['val_env_manager', 'trajectories_per_step'], message: 'validation scores every trajectory of its env groups; trajectories_per_step applies to train_env_manager only' });
  }
}

/** A warmup the schedule would not use is refused, never ignored. */
function checkSchedule(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  const t = c.actor_train.training_args;
  const path = ['actor_train', 'training_args'];
  if (t.warmup_steps !== undefined && t.warmup_ratio !== undefined) {
    ctx.addIssue({ code: 'custom', path: [...path, 'warmup_ratio'], message: `warmup_steps (${t.warmup_steps}) is set too; give one of the two` });
  }
  const warmup = t.warmup_steps ?? t.warmup_ratio ?? 0;
  if (t.lr_scheduler_type === 'constant' && warmup > 0) {
    const key = t.warmup_steps !== undefined ? 'warmup_steps' : 'warmup_ratio';
    ctx.addIssue({ code: 'custom', path: [...path, key], message: 'lr_scheduler_type constant has no warmup; use constant_with_warmup, linear or cosine' });
  }
}

/** Warmup in train steps: warmup_steps, or ⌈warmup_ratio × max_steps⌉ as transformers counts it. */
export function warmupSteps(c: Pick<RawRunConfig, 'actor_train' | 'max_steps'>): number {
  const t = c.actor_train.training_args;
  return t.warmup_steps ?? Math.ceil((t.warmup_ratio ?? 0) * c.max_steps);
}

/** The tolerance on domain_interleave_probs' sum. */
const SHARE_SUM_TOLERANCE = 1e-6;

/** domain_interleave_probs: shares summing to 1, of the rows of the one dataset env training draws from. */
function checkInterleave(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  for (const [tag, env] of Object.entries(c.custom_envs)) {
    if (env.env_config.domain_interleave_probs !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['custom_envs', tag, 'env_config', 'domain_interleave_probs'], message: 'set by the run config\'s top-level domain_interleave_probs; give the shares there' });
    }
  }
  const shares = c.domain_interleave_probs;
  if (!shares) return;
  const sum = Object.values(shares).reduce((a, b) => a + b, 0);
  if (Math.abs(sum - 1) > SHARE_SUM_TOLERANCE) {
    ctx.addIssue({ code: 'custom', path: ['domain_interleave_probs'], message: `expected each domain's share of a batch, summing to 1 (± ${SHARE_SUM_TOLERANCE}); these sum to ${sum}` });
  }
  const training = c.train_env_manager?.tags ?? Object.keys(c.custom_envs);
  const types = training.map((tag) => `${tag} (${c.custom_envs[tag]?.env_type ?? 'undefined'})`);
  if (training.length !== 1 || c.custom_envs[training[0]!]?.env_type !== 'dataset') {
    ctx.addIssue({ code: 'custom', path: ['domain_interleave_probs'], message: `needs exactly one training env, of env_type dataset (the shares are of its rows' domains); training draws from ${types.join(', ') || 'no env'}` });
  }
}

/** LoRA and dtype reach engines that act on them (model-args.ts); the inference servers' LoRA is the trainer's. */
function checkModelArgs(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  const train = c.actor_train.model_args;
  const infer = c.actor_infer.model_args;
  const lora = loraOf(train);
  const torchInference = c.engines.inference.some((e) => e.backend === 'torch');
  if (lora.rank.value > 0) {
    const at = ['actor_train', 'model_args', lora.rank.key];
    if (c.engines.trainer.backend !== 'torch') {
      ctx.addIssue({ code: 'custom', path: at, message: `LoRA is trained by the torch trainer only; engines.trainer.backend is "${c.engines.trainer.backend}"` });
    }
    c.engines.inference.forEach((e, i) => {
      if (e.backend !== 'torch') ctx.addIssue({ code: 'custom', path: at, message: `the inference servers apply the trainer's LoRA adapters, which only the torch backend does; engines.inference[${i}].backend is "${e.backend}"` });
    });
    if (infer && infer.model_name_or_path !== train.model_name_or_path) {
      ctx.addIssue({ code: 'custom', path: ['actor_infer', 'model_args', 'model_name_or_path'], message: `with LoRA the inference servers apply the trainer's adapter to the trainer's base model, actor_train.model_args.model_name_or_path "${train.model_name_or_path}"` });
    }
  }
  if (infer && setsLora(infer) && !sameLora(loraOf(infer), lora)) {
    const key = loraOf(infer).rank.key;
    ctx.addIssue({ code: 'custom', path: ['actor_infer', 'model_args', key], message: `the inference servers take their LoRA settings from actor_train.model_args (${lora.rank.key} ${lora.rank.value}) to apply the trainer's adapters; remove the LoRA keys here or give the same values` });
  }
  // dtype acts on torch engines only: the trainer, and the inference servers when actor_infer.model_args does not replace it.
  if (train.dtype !== undefined && c.engines.trainer.backend !== 'torch' && (infer !== undefined || !torchInference)) {
    ctx.addIssue({ code: 'custom', path: ['actor_train', 'model_args', 'dtype'], message: `only torch engines load a model in a dtype; no torch engine takes it here (megatron: engines.trainer.options.megatron.bf16; vllm: options.vllm.dtype)` });
  }
  if (infer?.dtype !== undefined && !torchInference) {
    ctx.addIssue({ code: 'custom', path: ['actor_infer', 'model_args', 'dtype'], message: 'only torch inference servers load a model in a dtype; none is configured (vllm: options.vllm.dtype)' });
  }
}

/** `rewards` routes dataset rows by domain: each domain to one reward, and only where a dataset env can use it. */
function checkRewards(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  const owner = new Map<string, string>();
  for (const [name, reward] of Object.entries(c.rewards)) {
    reward.tag_included.forEach((tag, i) => {
      const first = owner.get(tag);
      if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['rewards', name, 'tag_included', i], message: `domain "${tag}" is already scored by rewards.${first}; a domain goes to one reward` });
      else owner.set(tag, name);
    });
  }
  if (owner.size === 0) return;
  const routed = Object.entries(c.custom_envs).filter(([, e]) => e.env_type === 'dataset' && e.env_config.verifier === undefined);
  if (routed.length === 0) {
    ctx.addIssue({ code: 'custom', path: ['rewards'], message: 'rewards route dataset rows by domain, but no custom_envs entry is an env_type dataset without its own env_config.verifier' });
  }
}

export type RunConfigInput = z.input<typeof RunConfigSchema>;
export type RunConfig = z.output<typeof RunConfigSchema>;
