/** Turns a validated run config into the run workflow's plan: the one place the run reads the config. */
import type { LoadedConfig } from '../configs';
import { ConfigError } from '../configs';
import type { RunPlan } from '../workflows/run';

/** The env the run trains on: train_env_manager's first tag, or the only custom_envs entry of a single-turn task. */
function pickEnv({ config }: LoadedConfig) {
  const tags = config.train_env_manager?.tags ?? Object.keys(config.custom_envs);
  const tag = tags[0];
  if (tag === undefined || (!config.train_env_manager && tags.length !== 1)) {
    throw new ConfigError('(run)', [
      { path: 'custom_envs', given: Object.keys(config.custom_envs), expected: 'exactly one env for a single-turn run, or train_env_manager.tags naming the envs to train on' },
    ]);
  }
  if (tags.length > 1) {
    throw new ConfigError('(run)', [{ path: 'train_env_manager.tags', given: tags, expected: 'one tag (several envs per run are not supported yet)' }]);
  }
  return { tag, env: config.custom_envs[tag]! };
}

export function buildPlan(loaded: LoadedConfig, runId: string): RunPlan {
  const { config, derived } = loaded;
  const { env } = pickEnv(loaded);
  const gen = config.actor_infer.generating_args;
  return {
    runId,
    runDir: derived.run_dir,
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
    env: { type: env.env_type, config: env.env_config, maxTurns: env.max_steps },
    sampling: { max_tokens: env.max_tokens_per_step ?? gen.max_new_tokens, temperature: gen.temperature, top_p: gen.top_p },
    filter: config.group_filter,
    train: { pg_variant: config.pg_variant, adv_estimator: config.adv_estimator, reward_norm: config.reward_norm, ppo_epochs: config.ppo_epochs, temperature: gen.temperature },
    stepsPerRun: config.steps_per_workflow_run,
    saveSteps: config.save_steps,
    configHash: loaded.hash,
  };
}
