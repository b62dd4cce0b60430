/**
 * Role task queues (temporal.route_by_role): the activities that call an engine run on a worker beside an engine
 * of that role, because they are scheduled on the role's own task queue, which only such workers poll
 * (`rollflow worker --role`). Everything else stays on the run's task queue: workflow tasks, the store, the
 * weight sync's fan-out to every inference server, metrics.
 */
import type { EngineRole } from './engines';

/** The roles a worker can serve: `main` is the run's task queue (workflows and every call that needs no engine beside it). */
export const WORKER_ROLES = ['main', 'inference', 'trainer', 'env'] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];

/** The task queue of each engine role's calls. */
export type RoleQueues = Record<EngineRole, string>;

export function roleQueues(taskQueue: string): RoleQueues {
  return { inference: `${taskQueue}-inference`, trainer: `${taskQueue}-trainer`, env: `${taskQueue}-env` };
}

/** The task queue a worker of `role` polls. */
export function queueOfRole(taskQueue: string, role: WorkerRole): string {
  return role === 'main' ? taskQueue : roleQueues(taskQueue)[role];
}
