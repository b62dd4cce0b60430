/**
 * What each dispatched group gets: its env (the partition of positions over
 * the run's envs), its prompt (the env seed, from the epoch's seeded order,
 * or with domain_interleave_probs from DomainOrder) and its sampling seed. Pure, so the same ref gives the same group on
 * replay, after continue-as-new and after a resume.
 */
import { carryInline, type GroupInput } from './group';
import type { DomainOrder } from './domain-order';
import { epochOrder, type GroupRef, groupSamplingSeed, groupUid } from '../core';
import type { PlanEnv, RunPlan } from './run-plan';
import { carryQueues } from './routing';

/**
 * The env of the group at `position`: positions cycle through the envs in
 * blocks of their num_groups_partition share, so every step's groups mix
 * the envs as configured.
 */
export function envAt(envs: readonly PlanEnv[], position: number): PlanEnv {
  const cycle = envs.reduce((n, e) => n + e.groupsPerStep, 0);
  let slot = position % cycle;
  for (const e of envs) {
    if (slot < e.groupsPerStep) return e;
    slot -= e.groupsPerStep;
  }
  throw new Error('unreachable: slot beyond the partition');
}

export class GroupDispatch {
  /** Epoch orders computed so far (an epoch's order is a shuffle of the whole dataset). */
  private orders = new Map<number, number[]>();

  constructor(
    private readonly plan: RunPlan,
    private readonly datasetSize: number,
    /** With domain_interleave_probs: the domain and row of each position (positions run on across epochs). */
    private readonly domains?: DomainOrder,
  ) {}

  /** The prompt of the group at `ref`: its dataset index in the epoch's seeded order, or its domain's row. */
  envSeed(ref: GroupRef): number {
    if (this.domains) return this.domains.at(ref.epoch * this.datasetSize + ref.position).seed;
    let order = this.orders.get(ref.epoch);
    if (!order) this.orders.set(ref.epoch, (order = epochOrder(this.datasetSize, this.plan.seed, ref.epoch)));
    return order[ref.position]!;
  }

  /** The group workflow's input for `ref`, started while `startVersion` is served. */
  groupInput(ref: GroupRef, startVersion: number): GroupInput {
    const { plan } = this;
    const env = envAt(plan.envs, ref.position);
    return {
      runId: plan.runId,
      ref,
      groupUid: groupUid(ref),
      groupSize: plan.limits.groupSize,
      startVersion,
      env: env.spec,
      envSeed: this.envSeed(ref),
      sampling: { ...plan.sampling, max_tokens: env.maxTokens, seed: groupSamplingSeed(plan.seed, ref) },
      filter: plan.filter,
      replicate: plan.replicate,
      ...carryInline(plan.inlineTrajectories),
      ...carryQueues(plan.queues),
    };
  }
}
