/**
 * Reads what a run recorded, for the invariant checker: its metrics.jsonl
 * records, the batch files in the sample store, what the run workflow
 * returned, and every execution of its group workflows (status, result, a
 * cancel request) from Temporal.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { LoadedConfig } from '../configs';
import { causeMessage } from '../workflows/failure';
import { batchDir, METRIC, parseBatchStep, runDataDir } from '../core';
import type { RunStatus } from '../workflows/run';
import type { GroupResult } from '../workflows/run-buffer';
import type { GroupExecution, RunRecords } from './invariants';

const jsonLines = (file: string): Record<string, unknown>[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

export function readMetrics(loaded: LoadedConfig, runId: string): RunRecords['metrics'] {
  const file = path.join(runDataDir(loaded.derived.run_dir, runId), 'metrics.jsonl');
  if (!existsSync(file)) return [];
  return jsonLines(file)
    .filter((m) => m.run_id === runId)
    .map((m) => ({ step: Number(m.step), version: Number(m.version), wall_s: Number(m.wall_s), stalenessMax: Number(m[METRIC.stalenessMax]) }));
}

export function readBatches(loaded: LoadedConfig, runId: string): RunRecords['batches'] {
  const dir = path.join(loaded.derived.sample_store_path, batchDir(runId));
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const step = parseBatchStep(f);
      if (step === undefined) return [];
      const samples = jsonLines(path.join(dir, f)) as { uid: string; version_spans: { version: number }[] }[];
      return [{ step, uids: samples.map((s) => s.uid), oldestTokenVersion: Math.min(...samples.flatMap((s) => s.version_spans.map((v) => v.version))) }];
    });
}

const closed = (w: WorkflowExecutionInfo) => w.status.name !== 'RUNNING';

/** Group executions of the run started at `runStartMs` (not of an earlier run under the same id). */
async function groupExecutions(client: Client, runId: string, runStartMs: number): Promise<WorkflowExecutionInfo[]> {
  const found: WorkflowExecutionInfo[] = [];
  for await (const w of client.workflow.list({ query: `RollflowRunId = '${runId}' AND RollflowKind = 'group'` })) if (w.startTime.getTime() >= runStartMs) found.push(w);
  return found;
}

/**
 * The run's group executions once they have settled: as many as it
 * dispatched are listed (visibility lags a little) and none is still running
 * (the run cancels those in flight when it ends). `settleS` only guards
 * against a hang; what is still open then is reported as it is.
 */
async function settledGroups(client: Client, runId: string, runStartMs: number, dispatched: number, settleS: number): Promise<WorkflowExecutionInfo[]> {
  const deadline = Date.now() + settleS * 1000;
  for (;;) {
    const groups = await groupExecutions(client, runId, runStartMs);
    if ((groups.length >= dispatched && groups.every(closed)) || Date.now() > deadline) return groups;
    await sleep(500);
  }
}

async function describeGroup(client: Client, w: WorkflowExecutionInfo, runClosedAt: number): Promise<GroupExecution> {
  const handle = client.workflow.getHandle(w.workflowId, w.runId);
  const history = await handle.fetchHistory();
  const cancelRequested = (history.events ?? []).some((e) => e.workflowExecutionCancelRequestedEventAttributes);
  const result = w.status.name === 'COMPLETED' ? ((await handle.result()) as GroupResult) : undefined;
  return {
    workflowId: w.workflowId,
    uid: w.workflowId.slice(w.workflowId.lastIndexOf('/') + 1),
    status: w.status.name,
    closedAfterRun: !w.closeTime || w.closeTime.getTime() > runClosedAt,
    cancelRequested,
    ...(result ? { result: { accepted: result.accepted, ...(result.error !== undefined ? { error: result.error } : {}) } } : {}),
  };
}

/** Everything the checker reads about run `runId` (its first execution started at `runStartMs`), after it closed. */
export async function readRunRecords(client: Client, loaded: LoadedConfig, runId: string, runStartMs: number, settleS = 120): Promise<RunRecords> {
  const handle = client.workflow.getHandle(runId);
  const desc = await handle.describe();
  let final: RunStatus | undefined;
  let outcome: string = desc.status.name;
  try {
    final = (await handle.result()) as RunStatus;
  } catch (err) {
    outcome = `${desc.status.name}: ${causeMessage(err)}`; // why, not Temporal's "Workflow execution failed"
  }
  const runClosedAt = desc.closeTime?.getTime() ?? Date.now();
  // A run that did not complete cancels nothing: its groups are taken as they are.
  const groups = final ? await settledGroups(client, runId, runStartMs, final.totals.dispatchedGroups, settleS) : await groupExecutions(client, runId, runStartMs);
  return {
    runId,
    outcome,
    ...(final ? { final: { step: final.step, version: final.version, buffered: final.buffered, running: final.running, totals: final.totals } } : {}),
    metrics: readMetrics(loaded, runId),
    batches: readBatches(loaded, runId),
    groups: await Promise.all(groups.map((w) => describeGroup(client, w, runClosedAt))),
  };
}
