/**
 * The activity options of an engine role's calls: on the role's task queue when the run routes by role
 * (RunPlan.queues, handed on in every child's input), else on the workflow's own. The queues come from the
 * workflow's input only, so a workflow's commands are a function of its input: runs that do not route, and
 * every recorded history (none carries queues), schedule exactly what they did before.
 */
import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { EngineRole, RoleQueues } from '../core';

export function routed<T extends ActivityOptions>(options: T, role: EngineRole, queues: RoleQueues | undefined): T {
  return queues ? { ...options, taskQueue: queues[role] } : options;
}

/** The queues, as a field of a child's input: none when the run does not route by role. */
export const carryQueues = (queues: RoleQueues | undefined): { queues?: RoleQueues } => (queues ? { queues } : {});

/** The activities, scheduled with `options` on `role`'s queue when the run routes by role. */
export const roleActivities = (options: ActivityOptions, role: EngineRole, queues: RoleQueues | undefined) => proxyActivities<Activities>(routed(options, role, queues));
