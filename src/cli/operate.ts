/** `rollflow status | suspend | resume | sync-weights <run>`: operator commands on a run, each failing in one clear line. */
import type { Client } from '@temporalio/client';
import { connectClient } from '../client/connect';
import { NoWorkerError } from '../client/errors';
import { checkedRun, startWorkerHint, type CheckedRun } from '../client/run-handle';
import type { RunConfig } from '../configs';
import { causeMessage } from '../workflows/failure';
import { resume, status, suspend, syncWeightsUpdate } from '../workflows/run';

/** A query normally answers in milliseconds; past this the listed pollers are workers that stopped. */
const QUERY_DEADLINE_MS = 10_000;

/** gRPC's DEADLINE_EXCEEDED (4), on the error or (as the client's ServiceError wraps it) its cause. */
const deadlineExceeded = (e: unknown): boolean => e instanceof Error && ((e as { code?: unknown }).code === 4 || deadlineExceeded(e.cause));

async function withClient<T>(config: RunConfig, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await connectClient(config);
  try {
    return await fn(client);
  } finally {
    await client.connection.close();
  }
}

/** Signals and updates reach only a run still running (not completed, failed or terminated). */
function requireRunning({ description }: CheckedRun, runId: string, what: string): void {
  const state = description.status.name;
  if (state !== 'RUNNING') throw new Error(`run "${runId}" is ${state.toLowerCase().replace(/_/g, ' ')}; only a running run can ${what}`);
}

export async function runStatus(config: RunConfig, runId: string, out: (line: string) => void): Promise<void> {
  await withClient(config, async (client) => {
    const { handle, description } = await checkedRun(client, runId, { needsWorker: true });
    try {
      out(JSON.stringify(await client.connection.withDeadline(Date.now() + QUERY_DEADLINE_MS, () => handle.query(status)), null, 2));
    } catch (e) {
      if (!deadlineExceeded(e)) throw e;
      throw new NoWorkerError(`run "${runId}" did not answer within ${QUERY_DEADLINE_MS / 1000} s: no live worker on task queue "${description.taskQueue}" (a stopped one stays listed for a few minutes); ${startWorkerHint}`);
    }
  });
}

export async function steer(config: RunConfig, runId: string, action: 'suspend' | 'resume', out: (line: string) => void): Promise<void> {
  await withClient(config, async (client) => {
    const run = await checkedRun(client, runId, { needsWorker: false });
    requireRunning(run, runId, `be ${action}d`);
    await run.handle.signal(action === 'suspend' ? suspend : resume);
    // Temporal keeps the signal; the run acts on it once a worker picks the run up.
    out(`run ${runId}: ${action} sent${run.polled ? '' : `; no worker polls task queue "${run.description.taskQueue}" yet, so it takes effect when one does (${startWorkerHint})`}`);
  });
}

/** Loads external weights on every inference server of a run (between train steps); prints what the update returned. */
export async function syncRunWeights(config: RunConfig, runId: string, weightsPath: string, out: (line: string) => void): Promise<void> {
  await withClient(config, async (client) => {
    const run = await checkedRun(client, runId, { needsWorker: true });
    requireRunning(run, runId, 'load weights');
    try {
      out(JSON.stringify(await run.handle.executeUpdate(syncWeightsUpdate, { args: [{ path: weightsPath }] })));
    } catch (err) {
      throw new Error(`syncWeights failed: ${causeMessage(err)}`);
    }
  });
}
