/** Environments and rewards (ROLL: train_env_manager / val_env_manager / custom_envs / rewards). */
import { z } from 'zod';
import { ENV_LOSS_POLICIES } from '../../core';
import { count } from './fields';

/** The env server's verifiers a `rewards` entry can name (python-engines rewards/). */
export const REWARD_TYPES = ['exact_match', 'math_verify', 'code_exec', 'llm_judge'] as const;

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
      .enum(['auto', 'activity', 'local', 'turn'])
      .default('auto')
      .describe('(rollflow) How env reset/step and the sample write run: activity (each call its own task, retried and shown as pending in the UI), turn (each turn\'s generation and env step as one activity: half the tasks a turn, the same retries and durability, the UI showing the turn\'s action once its step returns; the reset and the sample write as local activities, so a quick reset is assumed), local (a local activity of the workflow: the least server work, for envs that answer in milliseconds, since a step that waits holds the workflow task), auto (local in one-request groups, turn in trajectory workflows; activity when temporal.route_by_role is on). docs/scaling.md.'),
    on_env_loss: z
      .enum(ENV_LOSS_POLICIES)
      .optional()
      .describe('(rollflow) When the env server loses an episode (it restarted, or the session expired; while it cannot be reached at all, calls wait until it answers again): replay (a fresh session at the same seed, the recorded actions applied again), restart (the episode starts over from turn 0; nothing of the lost one is trained), drop (the trajectory fails as an infrastructure failure, never trained). Default: what the env declares (frozen_lake and arithmetic: replay).'),
  })
  .describe('One env definition, referenced by its key from an env manager tag.');

export const RewardSchema = z
  .strictObject({
    type: z.enum(REWARD_TYPES).describe(`The env server's verifier that scores a response: ${REWARD_TYPES.join(' | ')}.`),
    tag_included: z.array(z.string().min(1)).min(1).describe('Sample domains (a dataset row\'s domain or tag) this reward scores.'),
    config: z.record(z.string(), z.unknown()).optional().describe('The verifier\'s settings, checked by it (e.g. code_exec: { mode: fraction }).'),
  })
  .describe('One reward worker, chosen by the sample\'s domain.');
