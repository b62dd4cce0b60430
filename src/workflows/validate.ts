/**
 * validate: scores the current weights on the validation envs
 * (val_env_manager) without training on them. The same prompts every time
 * (seeds from a fixed base, far from the training order's 0..N-1), so
 * successive validations are comparable; group workflows do the work but
 * report here, not to the run.
 */
import { executeChild, workflowInfo } from '@temporalio/workflow';
import { groupSummary } from './metadata';
import type { Sampling } from '../activities';
import { carryInline, group, type GroupInput } from './group';
import { carryQueues } from './routing';
import { childWorkflowId, type RoleQueues, validationGroupUid, validationSeeds } from '../core';
import type { GroupResult } from './run-buffer';
import { KIND, RUN_ID } from './search-attributes';
import type { ValidationEnv } from './env-spec';

export interface ValidateInput {
  runId: string;
  /** Training steps done: validation of version `steps`. */
  steps: number;
  version: number;
  envs: ValidationEnv[];
  groupSize: number;
  sampling: Omit<Sampling, 'seed' | 'max_tokens'>;
  seed: number;
  /** The run's prompt replication setting (GroupInput.replicate). */
  replicate: boolean;
  /** trajectory_workflows false (GroupInput.inline); absent: each trajectory its own workflow. */
  inline?: true;
  /** The run's role task queues (RunPlan.queues); absent when it does not route by role. */
  queues?: RoleQueues;
}

export interface ValidationResult {
  steps: number;
  version: number;
  samples: number;
  failedGroups: number;
  rewardMean: number;
  byTag: Record<string, { samples: number; rewardMean: number }>;
}

export async function validate(input: ValidateInput): Promise<ValidationResult> {
  const jobs = input.envs.flatMap((env) => Array.from({ length: env.groupsPerStep }, (_, i) => ({ env, i })));
  const results: { tag: string; result: GroupResult }[] = await Promise.all(
    jobs.map(async ({ env, i }, g) => {
      const seeds = validationSeeds(input.seed, i);
      const args: GroupInput = {
        runId: input.runId,
        reportToRun: false,
        ref: { epoch: -1, position: g },
        groupUid: validationGroupUid(input.steps, env.tag, i),
        groupSize: input.groupSize,
        startVersion: input.version,
        env: env.spec,
        envSeed: seeds.envSeed,
        sampling: { ...input.sampling, max_tokens: env.maxTokens, seed: seeds.samplingSeed },
        filter: 'none',
        replicate: input.replicate,
        ...carryInline(input.inline),
        ...carryQueues(input.queues),
      };
      const result = await executeChild(group, {
        workflowId: childWorkflowId(workflowInfo().workflowId, 'g', g),
        args: [args],
        typedSearchAttributes: [{ key: RUN_ID, value: input.runId }, { key: KIND, value: 'group' }],
        staticSummary: groupSummary(args.groupUid, args.env.type, input.version),
      });
      return { tag: env.tag, result };
    }),
  );
  const ok = results.filter((r) => r.result.error === undefined);
  const mean = (rs: typeof ok) => {
    const n = rs.reduce((a, r) => a + r.result.samples, 0);
    return { samples: n, rewardMean: n ? rs.reduce((a, r) => a + r.result.rewardMean * r.result.samples, 0) / n : 0 };
  };
  const byTag = Object.fromEntries(input.envs.map((e) => [e.tag, mean(ok.filter((r) => r.tag === e.tag))]));
  return { steps: input.steps, version: input.version, failedGroups: results.length - ok.length, ...mean(ok), byTag };
}
