import type { Client } from '@temporalio/client';

/** Ends a run and every workflow it started that still runs (groups are ABANDONed children and would keep loading the server). */
export async function terminateRun(client: Client, runId: string, reason: string): Promise<void> {
  for await (const wf of client.workflow.list({ query: `RollflowRunId = '${runId}' AND ExecutionStatus = 'Running'` })) {
    await client.workflow.getHandle(wf.workflowId, wf.runId).terminate(reason).catch(() => undefined);
  }
}
