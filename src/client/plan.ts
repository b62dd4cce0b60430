/** Turns a validated run config into the run workflow's plan: the one place the run reads the config. */
import { ConfigError, type LoadedConfig } from '../configs';
import { AlgorithmSettings, type RunConfig } from '../configs/schema';
import { describeStore, roleQueues, runDataDir } from '../core';
import type { RunPlan } from '../workflows/run';

type EnvManager = NonNullable<LoadedConfig['config']['train_env_manager']>;

/**
 * The envs a manager draws from and how many groups of each a step holds:
 * its tags split by num_groups_partition (evenly when it is absent, as ROLL
 * does), or, with no manager, the only custom_envs entry of a single-turn task.
 */
function pickEnvs({ config, source }: LoadedConfig, manager: EnvManager | undefined, groups: number): RunPlan['envs'] {
  const gen = config.actor_infer.generating_args;
  const tags = manager?.tags ?? Object.keys(config.custom_envs);
  if (tags.length === 0 || (!manager && tags.length !== 1)) {
    throw new ConfigError(source, [
      { path: 'custom_envs', given: Object.keys(config.custom_envs), expected: 'exactly one env for a single-turn run, or train_env_manager.tags naming the envs to train on' },
    ]);
  }
  const partition = manager?.num_groups_partition ?? tags.map((_, i) => Math.floor(groups / tags.length) + (i < groups % tags.length ? 1 : 0));
  return tags.map((tag, i) => {
    const env = config.custom_envs[tag]!;
    const perTurn = env.max_tokens_per_step ?? gen.max_new_tokens;
    const budget = env.max_tokens_per_episode;
    const spec = { type: env.env_type, config: withDomainRewards(config, env), maxTurns: env.max_steps, calls: env.env_calls, ...(env.on_env_loss ? { onLoss: env.on_env_loss } : {}), ...(budget !== undefined ? { maxEpisodeTokens: budget } : {}) };
    // The first turn may not exceed the episode's budget either (it is also a one-request group's only turn).
    return { tag, groupsPerStep: partition[i]!, spec, maxTokens: budget === undefined ? perTurn : Math.min(perTurn, budget) };
  }).filter((e) => e.groupsPerStep > 0);
}

/** Validation needs val_env_manager when eval_steps is set; envs without it are a config error, not a silent skip. */
/** A dataset env's config with the run's `rewards` as its domain routes (ROLL's reward workers by domain tag). */
function withDomainRewards(config: RunConfig, env: RunConfig['custom_envs'][string]): Record<string, unknown> {
  const rewards = Object.values(config.rewards);
  if (env.env_type !== 'dataset' || rewards.length === 0 || env.env_config.verifier !== undefined) return env.env_config;
  const routes = Object.fromEntries(rewards.flatMap((r) => r.tag_included.map((tag) => [tag, { verifier: r.type, ...(r.config ? { config: r.config } : {}) }])));
  return { ...env.env_config, domain_rewards: routes };
}

/** With domain_interleave_probs the training dataset env groups its rows by domain and checks the named ones exist (the schema allows one such env). */
function interleaved(config: RunConfig, envs: RunPlan['envs']): RunPlan['envs'] {
  const shares = config.domain_interleave_probs;
  if (!shares) return envs;
  return envs.map((e) => (e.spec.type === 'dataset' ? { ...e, spec: { ...e.spec, config: { ...e.spec.config, domain_interleave_probs: shares } } } : e));
}

function validation(loaded: LoadedConfig): Pick<RunPlan, 'validation'> {
  const { config } = loaded;
  const manager = config.val_env_manager;
  if (config.eval_steps === 0) return {};
  if (!manager) {
    throw new ConfigError(loaded.source, [{ path: 'val_env_manager', given: undefined, expected: `the validation envs (num_env_groups, group_size, tags), since eval_steps is ${config.eval_steps}` }]);
  }
  const training = new Set(config.train_env_manager?.tags ?? Object.keys(config.custom_envs));
  const shared = manager.tags.filter((tag) => training.has(tag) && config.custom_envs[tag]?.env_type === 'dataset' && config.custom_envs[tag]?.env_config.holdout === undefined);
  if (shared.length > 0) {
    throw new ConfigError(
      loaded.source,
      shared.map((tag) => ({ path: `custom_envs.${tag}.env_config.holdout`, given: undefined, expected: 'rows held out for validation (a count, or a share of the rows): this dataset env both trains and validates, and without a holdout validation would score training rows; or give val_env_manager a dataset env of its own' })),
    );
  }
  return { validation: { envs: pickEnvs(loaded, manager, manager.num_env_groups), groupSize: manager.group_size, everySteps: config.eval_steps } };
}

/** With a bucket store, the run's directory in the bucket (RunPlan.bucketRunDir), s3://<bucket>/<prefix><run id>. */
export const bucketRunDirOf = ({ derived }: LoadedConfig, runId: string): string | undefined => (derived.sample_store.kind === 's3' ? `${describeStore(derived.sample_store)}${runId}` : undefined);

/** Where a run keeps its records (metrics.jsonl, validation.jsonl): the bucket with a bucket store, else its directory. */
export const recordsDirOf = (loaded: LoadedConfig, runId: string): string => bucketRunDirOf(loaded, runId) ?? runDataDir(loaded.derived.run_dir, runId);

export function buildPlan(loaded: LoadedConfig, runId: string): RunPlan {
  const { config, derived } = loaded;
  const gen = config.actor_infer.generating_args;
  return {
    runId,
    runDir: runDataDir(derived.run_dir, runId),
    // With a bucket store the trainer's states and checkpoints go to the bucket: a trainer on any host reads them.
    ...(bucketRunDirOf(loaded, runId) ? { bucketRunDir: bucketRunDirOf(loaded, runId) } : {}),
    limits: {
      samplesPerStep: derived.samples_per_step,
      groupSize: derived.group_size,
      maxSamplesInSystem: derived.max_samples_in_system,
      maxStaleness: derived.max_staleness,
      stalePolicy: config.stale_policy,
    },
    datasetSize: config.dataset_size,
    seed: config.seed,
    maxSteps: config.max_steps,
    partialRollout: config.partial_rollout,
    rolloutMode: config.rollout_mode,
    waves: config.generate_opt_level === 0,
    spareGroups: derived.spare_groups,
    maxFailedGroupRatio: config.max_failed_group_ratio,
    replicate: config.is_num_return_sequences_expand,
    ...(config.trajectory_workflows ? {} : { inlineTrajectories: true as const }),
    // A group's env follows its position over the manager's env groups (all of them, redundant ones too).
    envs: interleaved(config, pickEnvs(loaded, config.train_env_manager, config.train_env_manager?.num_env_groups ?? derived.groups_per_step)),
    ...(config.domain_interleave_probs ? { domainInterleave: config.domain_interleave_probs } : {}),
    ...validation(loaded),
    sampling: { temperature: gen.temperature, top_p: gen.top_p, top_k: gen.top_k },
    filter: config.group_filter,
    train: {
      pg_variant: config.pg_variant,
      adv_estimator: config.adv_estimator,
      ...(config.reward_norm === undefined ? {} : { reward_norm: config.reward_norm }),
      ppo_epochs: config.ppo_epochs,
      temperature: gen.temperature,
      // Unset settings stay unset: the trainer's defaults apply.
      ...Object.fromEntries(Object.keys(AlgorithmSettings.shape).flatMap((k) => (config[k as keyof typeof config] === undefined ? [] : [[k, config[k as keyof typeof config]]]))),
      // Dr. GRPO's constant is the generation budget unless given.
      ...(config.loss_agg_mode === 'seq_mean_token_sum_norm' && config.loss_scale_factor === undefined ? { loss_scale_factor: gen.max_new_tokens } : {}),
    },
    stepsPerRun: config.steps_per_workflow_run,
    saveSteps: config.save_steps,
    trainerStateSaveSteps: config.trainer_state_save_steps,
    configHash: loaded.hash,
    ...(config.temporal.route_by_role ? { queues: roleQueues(config.temporal.task_queue) } : {}),
    ...tracking(loaded),
  };
}

/** track_with, its settings, and the config the trackers log as hyper-parameters. */
function tracking({ config }: LoadedConfig): Pick<RunPlan, 'tracking'> {
  if (config.track_with === undefined) return {};
  const trackWith = [...new Set(Array.isArray(config.track_with) ? config.track_with : [config.track_with])];
  return { tracking: { trackWith, kwargs: config.tracker_kwargs, hparams: config as unknown as Record<string, unknown> } };
}
