/**
 * The run config: one zod schema is the source of truth. Key names follow ROLL
 * where ROLL has them; rollflow's own keys are marked "(rollflow)". Every field
 * carries a one-line description (a unit test checks this). Values computed
 * from these fields live in derive.ts and nowhere else.
 *
 * This file holds the top-level keys; each section under them has its own file
 * under sections/ (engines, temporal, actors, envs, algorithm), and the checks
 * between fields are checks.ts.
 */
import { z } from 'zod';
import { checkCrossReferences } from './checks';
import { ActorInferSchema, ActorTrainSchema } from './sections/actors';
import { AlgorithmSettings } from './sections/algorithm';
import { EnginesSchema } from './sections/engines';
import { CustomEnvSchema, EnvManagerSchema, RewardSchema } from './sections/envs';
import { count } from './sections/fields';
import { SampleStoreSchema } from './sections/sample-store';
import { TemporalSchema } from './sections/temporal';

export { ActorInferSchema, ActorTrainSchema, LR_SCHEDULER_TYPES, warmupSteps } from './sections/actors';
export { AlgorithmSettings, LOSS_AGG_MODES } from './sections/algorithm';
export { EnginesSchema } from './sections/engines';
export { CustomEnvSchema, EnvManagerSchema, REWARD_TYPES, RewardSchema } from './sections/envs';
export { TemporalSchema, WORKER_SLOTS } from './sections/temporal';

// ---- algorithms: the names python-engines registers (see python-engines losses/advantages; its tests read them here)
export const PG_VARIANTS = ['vanilla', 'ppo', 'decoupled_ppo', 'tis', 'cispo', 'topr', 'gspo', 'clip_cov', 'kl_cov'] as const;
export const ADV_ESTIMATORS = ['grpo', 'reinforce', 'gae', 'rloo', 'reinforce_plus_plus_baseline'] as const;
export const REWARD_NORMS = ['none', 'group', 'batch', 'group_mean_batch_std'] as const;
export const TRACKERS = ['tensorboard', 'wandb', 'stdout'] as const;

// ---- the run config
export const RunConfigSchema = z
  .strictObject({
    exp_name: z.string().regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" or "-"').default('rollflow').describe('Experiment name; names the run directory.'),
    seed: z.number().int().min(0).default(42).describe('Seed for prompt order, sampling and envs.'),
    max_steps: count(1).default(10).describe('Training steps to run.'),
    save_steps: count(0).default(0).describe('Checkpoint every N steps; 0 saves only at the end.'),
    trainer_state_save_steps: count(0).default(5).describe('(rollflow) Save the trainer\'s state every N steps (and at the start) under <run_dir>/<run id>/trainer-state (with a bucket sample store, under s3://<bucket>/<prefix><run id>/trainer-state), so a trainer that restarts is brought back to the run\'s version by itself: the newest saved state is loaded and the stored batches since it are replayed. 0 saves it at the start only (a recovery then replays every step).'),
    eval_steps: count(0).default(0).describe('Validate every N steps; 0 never validates.'),

    rollout_batch_size: count(1).default(8).describe('Prompts per training step (single-turn tasks).'),
    num_return_sequences_in_group: count(1).default(1).describe('Responses sampled per prompt (GRPO group size).'),
    is_num_return_sequences_expand: z.boolean().default(true).describe('Prompt replication: the n responses of a prompt are n independent requests, each sample its own workflow (ROLL defaults to false: one request with n choices; single-turn only).'),
    trajectory_workflows: z
      .boolean()
      .default(true)
      .describe('(rollflow) true: each trajectory of a group is its own child workflow, with its own page in the Temporal UI (RollflowKind "trajectory"). false: a group\'s trajectories run inside the group\'s workflow, concurrently, with the same calls, retries and records: one workflow per group instead of 1 + G, so a step\'s start costs the server far less; each trajectory\'s transcript and calls are on its group\'s page (docs/scaling.md).'),
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
    sample_store: SampleStoreSchema,
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

export type RunConfigInput = z.input<typeof RunConfigSchema>;
export type RunConfig = z.output<typeof RunConfigSchema>;
