/**
 * The children a run starts, each with its workflow id, search attributes and
 * summary: its rollout groups (a `group` each, or one `lockstepRollout` for a
 * batch of them), a `trainStep` per step and a `validate` per validation.
 * Groups are ABANDONed, so they outlive a continue-as-new and report to the
 * run's workflow id, which reaches the new execution.
 */
import { executeChild, getExternalWorkflowHandle, ParentClosePolicy, startChild } from '@temporalio/workflow';
import type { TrainerBinding } from '../activities';
import { groupUid, groupWorkflowId, lockstepWorkflowId, trainStepWorkflowId, validateWorkflowId, type GroupRef } from '../core';
import type { GroupDispatch } from './dispatch';
import { carryInline, group } from './group';
import { lockstepRollout } from './lockstep';
import { groupSummary, trainStepSummary, validateSummary } from './metadata';
import type { Batch } from './run-buffer';
import type { RunPlan } from './run-plan';
import { carryQueues } from './routing';
import { KIND, RUN_ID, STEP } from './search-attributes';
import { trainStep } from './train-step';
import { validate } from './validate';

export class RunChildren {
  constructor(
    private readonly plan: RunPlan,
    private readonly groups: GroupDispatch,
    /** The lockstep workflow that runs each group, by group uid (a group of env_async mode runs in its own). */
    private readonly owners: Map<string, string>,
    /** The run's hold on its trainer (trainerBinding). */
    private readonly trainer: { binding?: TrainerBinding },
  ) {}

  private attributes(kind: string) {
    return [{ key: RUN_ID, value: this.plan.runId }, { key: KIND, value: kind }];
  }

  /** Starts the groups at `refs` while `version` is served. */
  async startGroups(refs: GroupRef[], version: number): Promise<void> {
    const { plan, groups } = this;
    if (plan.rolloutMode === 'env_async') {
      await Promise.all(refs.map((ref) => {
        const args = groups.groupInput(ref, version);
        return startChild(group, { workflowId: groupWorkflowId(plan.runId, ref), args: [args], parentClosePolicy: ParentClosePolicy.ABANDON, typedSearchAttributes: this.attributes('group'), staticSummary: groupSummary(args.groupUid, args.env.type, version) });
      }));
      return;
    }
    const workflowId = lockstepWorkflowId(plan.runId, refs[0]!);
    for (const ref of refs) this.owners.set(groupUid(ref), workflowId);
    const args = { runId: plan.runId, groups: refs.map((ref) => groups.groupInput(ref, version)) };
    await startChild(lockstepRollout, { workflowId, args: [args], parentClosePolicy: ParentClosePolicy.ABANDON, typedSearchAttributes: this.attributes('lockstep'), staticSummary: `lockstep batch · ${refs.length} groups · v${version}` });
  }

  /** Cancels the groups still generating (the run is done with them); returns how many workflows that took. */
  async cancelGroups(refs: GroupRef[]): Promise<number> {
    const running = new Set(refs.map((ref) => this.owners.get(groupUid(ref)) ?? groupWorkflowId(this.plan.runId, ref)));
    await Promise.all([...running].map((id) => getExternalWorkflowHandle(id).cancel().catch(() => undefined)));
    return running.size;
  }

  trainStep(batch: Batch) {
    const { plan } = this;
    return executeChild(trainStep, {
      workflowId: trainStepWorkflowId(plan.runId, batch.step),
      args: [{ runId: plan.runId, step: batch.step, sampleKeys: batch.groups.flatMap((g) => g.storeKeys), options: plan.train, ...this.trainer, ...carryQueues(plan.queues) }],
      typedSearchAttributes: [...this.attributes('trainStep'), { key: STEP, value: batch.step }],
      staticSummary: trainStepSummary(batch.step, batch.groups.reduce((n, g) => n + g.samples, 0), batch.version),
    });
  }

  /** The validation of `version` after `steps` steps (plan.validation is set). */
  validate(steps: number, version: number) {
    const { plan } = this;
    const v = plan.validation!;
    return executeChild(validate, {
      workflowId: validateWorkflowId(plan.runId, steps),
      args: [{ runId: plan.runId, steps, version, envs: v.envs, groupSize: v.groupSize, sampling: plan.sampling, seed: plan.seed, replicate: plan.replicate, ...carryInline(plan.inlineTrajectories), ...carryQueues(plan.queues) }],
      typedSearchAttributes: [...this.attributes('validate'), { key: STEP, value: steps }],
      staticSummary: validateSummary(steps, version),
    });
  }
}
