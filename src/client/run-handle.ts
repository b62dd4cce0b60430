/**
 * A run's workflow handle for an operator command (status, suspend, resume,
 * sync-weights), checked first so a mistake is one clear line rather than a
 * hang or a gRPC error: the run must exist, and a query or update needs a
 * worker polling the run's task queue (Temporal would otherwise hold a query
 * for 30 s and then say only "Failed to query Workflow").
 */
import { temporal } from '@temporalio/proto';
import { WorkflowNotFoundError, type Client, type WorkflowExecutionDescription, type WorkflowHandle } from '@temporalio/client';
import { NoWorkerError, RunNotFoundError } from './errors';

/**
 * Identities of the processes polling a task queue for workflow tasks (or, `kind` activity, for activity tasks: an
 * engine role's queue has only those); Temporal keeps listing a stopped one for a few minutes.
 */
export async function taskQueuePollers(client: Client, namespace: string, taskQueue: string, kind: 'workflow' | 'activity' = 'workflow'): Promise<string[]> {
  const { TASK_QUEUE_TYPE_WORKFLOW, TASK_QUEUE_TYPE_ACTIVITY } = temporal.api.enums.v1.TaskQueueType;
  const res = await client.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue },
    taskQueueType: kind === 'workflow' ? TASK_QUEUE_TYPE_WORKFLOW : TASK_QUEUE_TYPE_ACTIVITY,
  });
  return (res.pollers ?? []).map((p) => p.identity ?? '');
}

export const startWorkerHint = 'start one with `rollflow dev up` (or `rollflow worker` in the foreground)';

export interface CheckedRun {
  handle: WorkflowHandle;
  description: WorkflowExecutionDescription;
  /** Whether a worker polls the run's task queue. */
  polled: boolean;
}

export async function checkedRun(client: Client, runId: string, { needsWorker }: { needsWorker: boolean }): Promise<CheckedRun> {
  const handle = client.workflow.getHandle(runId);
  let description: WorkflowExecutionDescription;
  try {
    description = await handle.describe();
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) throw new RunNotFoundError(`no run "${runId}" in namespace ${client.options.namespace}`);
    throw e;
  }
  const queue = description.taskQueue;
  const polled = (await taskQueuePollers(client, client.options.namespace, queue)).length > 0;
  if (needsWorker && !polled) throw new NoWorkerError(`no worker is polling task queue "${queue}", so run "${runId}" cannot answer; ${startWorkerHint}`);
  return { handle, description, polled };
}
