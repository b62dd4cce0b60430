/** What a run's plan says of its envs: each env's spec, the group filter, a validation env. run-plan.ts holds
 * them and the trajectory, group and validate workflows read them; apart from those workflows so that the plan's
 * types import none of them. */
import type { EnvLossPolicy } from '../core';

export interface EnvSpec {
  type: string;
  config: Record<string, unknown>;
  maxTurns: number;
  /** custom_envs.<tag>.env_calls; absent = auto. */
  calls?: 'auto' | 'activity' | 'local' | 'turn';
  /** custom_envs.<tag>.on_env_loss; absent = what the env declares at reset (EnvReset.onLoss). */
  onLoss?: EnvLossPolicy;
  /**
   * custom_envs.<tag>.max_tokens_per_episode: tokens the episode may generate over all its turns. Absent in every
   * run from before it, which keep their commands unchanged: only a run with a budget caps turns or ends early.
   */
  maxEpisodeTokens?: number;
}

/** group_filter: none keeps every group; std drops groups whose rewards are all equal (no GRPO signal). */
export type GroupFilter = 'none' | 'std';

export interface ValidationEnv {
  tag: string;
  groupsPerStep: number;
  spec: EnvSpec;
  maxTokens: number;
}
