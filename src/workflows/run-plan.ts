/** The run's plan: everything the `run` workflow needs, computed from the run config on the client (workflows never read files). */
import type { Sampling, TrainerBinding, TrainOptions } from '../activities';
import { type RoleQueues, type TrackingSpec, trainerStateDir } from '../core';
import type { EnvSpec, GroupFilter, ValidationEnv } from './env-spec';
import type { AdmissionLimits } from './run-admission';

export type RolloutMode = 'env_async' | 'lockstep';

/** An env the run trains on (a train_env_manager tag). */
export interface PlanEnv {
  tag: string;
  /** How many of every cycle of positions go to this env (num_groups_partition; see envAt). */
  groupsPerStep: number;
  spec: EnvSpec;
  maxTokens: number;
}

export interface RunPlan {
  runId: string;
  /** This run's own directory, <run_dir>/<run id> (ids.runDataDir): metrics, validation records, checkpoints. */
  runDir: string;
  /**
   * With a bucket store, s3://<bucket>/<prefix><run id>: the trainer's saved states and the trainer part of each
   * checkpoint go under it instead of runDir, so a trainer on any host writes and reads them (docs/object-store.md).
   * Absent: under runDir (a directory store, and plans made before it).
   */
  bucketRunDir?: string;
  limits: AdmissionLimits;
  datasetSize: number;
  seed: number;
  maxSteps: number;
  partialRollout: boolean;
  /** Prompt replication (see GroupInput.replicate); always on for multi-turn envs. */
  replicate: boolean;
  /** trajectory_workflows false: a group's trajectories run in the group's workflow (GroupInput.inline); absent: each its own. */
  inlineTrajectories?: true;
  /** generate_opt_level 0: dispatch in waves, the next only when no group is in flight (the batch-mode baseline). */
  waves?: boolean;
  /** Groups started beyond what the remaining steps need: redundant env groups and max_additional_running_prompts (Derived.spare_groups). */
  spareGroups?: number;
  /** max_failed_group_ratio: the share of failed groups at which the run stops (from 4 failures on). */
  maxFailedGroupRatio?: number;
  /** env_async: every trajectory its own workflow; lockstep: the groups dispatched together advance turn by turn as one batch (baseline). */
  rolloutMode: RolloutMode;
  /** The envs (train_env_manager tags) and how many of every num_env_groups positions each gets (num_groups_partition); a group's env follows its position. */
  envs: PlanEnv[];
  /**
   * domain_interleave_probs: each domain's share of every step's groups (domain-order.ts). Absent without it, and in
   * plans made before it existed: their runs take prompts in the epoch order whatever their domain.
   */
  domainInterleave?: Record<string, number>;
  sampling: Omit<Sampling, 'seed' | 'max_tokens'>;
  filter: GroupFilter;
  train: TrainOptions;
  /** Continue-as-new after this many steps in one workflow run. */
  stepsPerRun: number;
  /** val_env_manager's envs, validated before training, every `everySteps` steps and at the end. */
  validation?: { envs: ValidationEnv[]; groupSize: number; everySteps: number };
  /** Checkpoint every N steps (0: only at the end). */
  saveSteps: number;
  /**
   * trainer_state_save_steps: the trainer's state is saved every N steps (and at the start) so a restarted
   * trainer is recovered without an operator; 0 saves it at the start only. Absent in plans made before
   * recovery existed: their runs are not bound to their trainer (see trainerBinding).
   */
  trainerStateSaveSteps?: number;
  configHash: string;
  /** temporal.route_by_role: each engine role's task queue, which every child's input carries on. Absent: one queue for everything. */
  queues?: RoleQueues;
  /** track_with: the trackers every metrics and validation record goes to (the appendMetrics activity feeds them); absent without trackers. */
  tracking?: TrackingSpec;
}

/**
 * The `binding` argument of the trainer activities: what binds the run to its trainer and rebuilds a restarted
 * one (activities/trainer-recovery.ts). None for plans made before it: their runs never bound their trainer.
 */
export function trainerBinding(plan: RunPlan): { binding?: TrainerBinding } {
  if (plan.trainerStateSaveSteps === undefined) return {};
  return { binding: { runId: plan.runId, stateDir: trainerStateDir(plan.bucketRunDir ?? plan.runDir), saveEverySteps: plan.trainerStateSaveSteps, options: plan.train } };
}
