/**
 * A worker that starts reclaims what a dead worker of this host left behind,
 * so a worker killed and restarted in place (by `rollflow dev up`, a process
 * supervisor) costs the run its restart time, not a heartbeat timeout:
 *
 * - each call a dead worker had started (a pending activity whose last
 *   worker identity is `<pid>@<this host>` with no such process) is failed
 *   at once with a retryable WorkerLostError, keeping its last heartbeat
 *   details, so the retry starts now and continues from its partial tokens;
 * - each open workflow's sticky queue is reset, so its next task goes to the
 *   shared queue now instead of waiting out the dead worker's sticky queue.
 *
 * Workers of other hosts are left to the heartbeat timeout: a pid says
 * nothing about another machine. A call retried meanwhile by its timeout is
 * at worst failed once more and retried again; every retry is safe.
 */
import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

export interface Reclaimed {
  workflows: number;
  activities: number;
}

/**
 * This worker's host: ROLLFLOW_HOST when set (hosts that share one kernel's hostname, such as the network
 * namespaces of hosts/netns.sh, say which they are), else the hostname.
 */
export const workerHost = (): string => process.env.ROLLFLOW_HOST || hostname();

/** A worker's identity, `<pid>@<host>` (the SDK's default form, with workerHost). */
export const workerIdentity = (): string => `${process.pid}@${workerHost()}`;

/** The pid of a worker identity `<pid>@<host>` on this host, else undefined. */
export function localPid(identity: string | null | undefined, host = workerHost()): number | undefined {
  const m = /^(\d+)@(.+)$/.exec(identity ?? '');
  return m && m[2] === host ? Number(m[1]) : undefined;
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // alive, someone else's
  }
}

export async function reclaimFromDeadWorkers(client: Client, taskQueue: string, identity: string, alive = processAlive): Promise<Reclaimed> {
  const { namespace } = client.options;
  const service = client.workflowService;
  const reclaimed: Reclaimed = { workflows: 0, activities: 0 };
  for await (const wf of client.workflow.list({ query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'` })) {
    const execution = { workflowId: wf.workflowId, runId: wf.runId };
    const described = await service.describeWorkflowExecution({ namespace, execution });
    for (const a of described.pendingActivities ?? []) {
      const pid = localPid(a.lastWorkerIdentity);
      if (a.state !== STARTED || pid === undefined || alive(pid)) continue;
      await service
        .respondActivityTaskFailedById({
          namespace,
          ...execution,
          activityId: a.activityId,
          identity,
          failure: { message: `worker ${a.lastWorkerIdentity} died while running this call; retried at once by ${identity}`, source: 'rollflow', applicationFailureInfo: { type: 'WorkerLostError', nonRetryable: false } },
          ...(a.heartbeatDetails ? { lastHeartbeatDetails: a.heartbeatDetails } : {}),
        })
        .then(
          () => void reclaimed.activities++,
          () => undefined, // already retried, completed or timed out meanwhile
        );
    }
    await service.resetStickyTaskQueue({ namespace, execution }).catch(() => undefined); // closed meanwhile
    reclaimed.workflows++;
  }
  return reclaimed;
}
