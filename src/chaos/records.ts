/**
 * Reads what a run recorded, for the invariant checker, each record from its
 * own writer: metrics.jsonl and the batch files (the workflow), the sample
 * store's files, the trainer's step log, the env server's action log, what
 * the run workflow returned, and from Temporal every execution of its group
 * and trainStep workflows and of the run itself (histories). The only place
 * that reads records; the checks (invariants.ts and beside it) are pure.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { defaultPayloadConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import type { LoadedConfig } from '../configs';
import { dataConverterOf } from '../codec/encryption';
import { launchedEngines, stateDirOptions, trainerStepLog } from '../stack/engines';
import { causeMessage } from '../workflows/failure';
import { batchDir, parseBatchStep, runDataDir, storeDirectory, trainerStateDir } from '../core';
import type { RunStatus } from '../workflows/run';
import type { GroupResult } from '../workflows/run-buffer';
import type { GroupExecution, RunRecords, TrainerLogLine, TrainStepExecution } from './record-types';

/** A JSON-lines file's objects, and how many lines were not JSON objects (torn by a crash mid-write, or garbage). */
export function jsonLines(file: string): { records: Record<string, unknown>[]; unreadable: number } {
  const records: Record<string, unknown>[] = [];
  let unreadable = 0;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      const v = JSON.parse(line) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) records.push(v as Record<string, unknown>);
      else unreadable++;
    } catch {
      unreadable++;
    }
  }
  return { records, unreadable };
}

/** Every metrics.jsonl line of the run as written: nothing deduplicated, so a step recorded twice shows twice. */
export function readMetrics(loaded: LoadedConfig, runId: string): RunRecords['metrics'] {
  const file = path.join(runDataDir(loaded.derived.run_dir, runId), 'metrics.jsonl');
  if (!existsSync(file)) return [];
  return jsonLines(file)
    .records.filter((m) => m.run_id === runId)
    .map((m) => ({ step: Number(m.step), version: Number(m.version), wall_s: Number(m.wall_s) }));
}

interface StoredSample {
  uid: string;
  response_ids: unknown[];
  loss_mask?: (0 | 1)[] | null;
  versions?: number[] | null;
  version_spans?: { start: number; end: number; version: number }[] | null;
}

/**
 * The oldest version that generated a trained token (loss_mask 1; env tokens of a multi-turn response have no
 * version and are not trained) of the sample: undefined when it records none or its spans leave such a token
 * out (its staleness is unknown), null when it has no trained token (nothing to bound).
 */
export function oldestTokenVersion(s: StoredSample): number | undefined | null {
  const trained = s.response_ids.map((_, i) => (s.loss_mask?.[i] ?? 1) === 1);
  if (!trained.some(Boolean)) return null;
  const version: (number | undefined)[] = trained.map(() => undefined);
  if (s.versions?.length === trained.length) s.versions.forEach((v, i) => (version[i] = v));
  else for (const sp of s.version_spans ?? []) for (let i = Math.max(0, sp.start); i < Math.min(sp.end, trained.length); i++) version[i] = Math.min(version[i] ?? Infinity, sp.version);
  const known = version.filter((v, i) => trained[i]);
  return known.every((v) => v !== undefined) ? Math.min(...(known as number[])) : undefined;
}

export function readBatches(loaded: LoadedConfig, runId: string): RunRecords['batches'] {
  const dir = path.join(storeDirectory(loaded.derived.sample_store, 'rollflow chaos'), batchDir(runId));
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const step = parseBatchStep(f);
      if (step === undefined) return [];
      const { records, unreadable } = jsonLines(path.join(dir, f));
      const samples = records as unknown as StoredSample[];
      const broken = unreadable ? `${unreadable} lines not JSON` : samples.some((s) => typeof s.uid !== 'string' || !Array.isArray(s.response_ids)) ? 'a line that is not a sample' : undefined;
      if (broken) return [{ step, uids: [], oldestTokenVersion: [], unreadable: broken }];
      return [{ step, uids: samples.map((s) => s.uid), oldestTokenVersion: samples.map(oldestTokenVersion) }];
    });
}

/** The uids of the run's sample files in the store (sampleKey: <run>/samples/<uid>.json). */
export function readSampleUids(loaded: LoadedConfig, runId: string): string[] {
  const dir = path.join(storeDirectory(loaded.derived.sample_store, 'rollflow chaos'), runId, 'samples');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((f) => (f.endsWith('.json') ? [f.slice(0, -'.json'.length)] : []));
}

/** The trainer's step log lines of run `runId` (file: the launched trainer's, see stack/engines.ts trainerStepLog). */
export function readTrainerLog(file: string | undefined, runId: string): RunRecords['trainerLog'] {
  if (!file) return { why: 'the config launches no trainer, so where its step log is is unknown (launch it, or give it the step_log option)' };
  if (!existsSync(file)) return { file, why: `${file} does not exist` };
  const { records, unreadable } = jsonLines(file);
  const lines: TrainerLogLine[] = [];
  let bad = unreadable;
  for (const r of records) {
    if (r.run_id !== runId) continue;
    const lineage = String(r.lineage);
    if (typeof r.step === 'number' && typeof r.version_after === 'number' && typeof r.uids_sha256 === 'string') {
      lines.push({ kind: 'step', step: r.step, versionAfter: r.version_after, uidsSha256: r.uids_sha256, lineage, recovered: r.recovered === true });
    } else if ((r.event === 'reset' || r.event === 'load' || r.event === 'save') && typeof r.version === 'number') {
      lines.push({ kind: r.event, version: r.version, lineage, ...(r.parent !== undefined ? { parent: r.parent as string | null } : {}), ...(typeof r.path === 'string' ? { path: r.path } : {}) });
    } else bad++;
  }
  return { file, lines, unreadableLines: bad };
}

/** The trainer states recovery passed over for run `runId` (recovery.jsonl, src/activities/trainer-recovery.ts). */
export function readSkippedStates(loaded: LoadedConfig, runId: string): NonNullable<RunRecords['skippedStates']> {
  const file = path.join(trainerStateDir(runDataDir(loaded.derived.run_dir, runId)), 'recovery.jsonl');
  if (!existsSync(file)) return [];
  return jsonLines(file).records.flatMap((r) => (r.run_id === runId && typeof r.version === 'number' ? [{ version: r.version, reason: String(r.reason) }] : []));
}

/** Files (recursively) under `dirs` that are JSON or JSON lines and do not parse; temp files and trainer states left out. */
export function readTornFiles(dirs: readonly string[]): string[] {
  const torn: string[] = [];
  const walk = (dir: string): void => {
    for (const e of existsSync(dir) ? readdirSync(dir, { withFileTypes: true }) : []) {
      const file = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'trainer-state') walk(file);
      } else if (e.isFile() && !/\.tmp-\d+-[0-9a-f]{8}$/.test(e.name)) {
        if (e.name.endsWith('.jsonl') && jsonLines(file).unreadable > 0) torn.push(file);
        if (e.name.endsWith('.json') && !parses(readFileSync(file, 'utf8'))) torn.push(file);
      }
    }
  };
  for (const d of dirs) walk(d);
  return torn;
}

const parses = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** The env server's action log (env option action_log: one line per env step applied), when the config names one and it exists. */
export function readEnvActions(file: string | undefined): RunRecords['envActions'] {
  if (!file || !existsSync(file)) return undefined;
  const { records, unreadable } = jsonLines(file);
  const lines: NonNullable<RunRecords['envActions']>['lines'] = [];
  let bad = unreadable;
  for (const r of records) {
    if (typeof r.session === 'string' && Number.isInteger(r.index) && typeof r.action_sha256 === 'string') lines.push({ session: r.session, index: r.index as number, actionSha256: r.action_sha256 });
    else bad++;
  }
  return { file, lines, unreadableLines: bad };
}

const closed = (w: WorkflowExecutionInfo) => w.status.name !== 'RUNNING';

/** Executions listed by `query` that started with this run (not an earlier run under the same id). */
async function executionsOf(client: Client, query: string, runStartMs: number): Promise<WorkflowExecutionInfo[]> {
  const found: WorkflowExecutionInfo[] = [];
  for await (const w of client.workflow.list({ query })) if (w.startTime.getTime() >= runStartMs) found.push(w);
  return found;
}


/** Group executions of the run started at `runStartMs` (not of an earlier run under the same id). */
const groupExecutions = (client: Client, runId: string, runStartMs: number) => executionsOf(client, `RollflowRunId = '${runId}' AND RollflowKind = 'group'`, runStartMs);

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

/** The first payload of `payloads`, through the config's codecs (temporal.encryption) and the default converter. */
async function decoded(codecs: readonly PayloadCodec[], payloads: readonly Payload[] | null | undefined): Promise<unknown> {
  let ps: Payload[] = payloads?.[0] ? [payloads[0]] : [];
  if (ps.length === 0) return undefined;
  for (const c of [...codecs].reverse()) ps = await c.decode(ps);
  return defaultPayloadConverter.fromPayload(ps[0]!);
}

const TRAIN_ID = /\/train-(\d+)$/;

/** One trainStep execution from its history: its runTrainStep activity (scheduled, attempts, completed, input, result) and its writeBatch input. */
async function describeTrainStep(client: Client, codecs: readonly PayloadCodec[], w: WorkflowExecutionInfo): Promise<TrainStepExecution> {
  const { events } = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
  const t: TrainStepExecution = { workflowId: w.workflowId, step: Number(TRAIN_ID.exec(w.workflowId)?.[1] ?? -1), status: w.status.name, trainScheduled: 0, trainCompleted: 0, trainAttempts: 0 };
  const typeOf = new Map<string, string>();
  for (const e of events ?? []) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s) {
      const type = s.activityType?.name ?? '';
      typeOf.set(String(e.eventId), type);
      if (type === 'runTrainStep') {
        t.trainScheduled++;
        t.trainInputStep = ((await decoded(codecs, s.input?.payloads)) as { step?: number } | undefined)?.step;
      } else if (type === 'writeBatch') {
        const keys = ((await decoded(codecs, s.input?.payloads)) as { sampleKeys?: string[] } | undefined)?.sampleKeys ?? [];
        t.batchUids = keys.map((k) => path.basename(k, '.json')); // sampleKey: <run>/samples/<uid>.json
      }
    }
    const started = e.activityTaskStartedEventAttributes;
    if (started && typeOf.get(String(started.scheduledEventId)) === 'runTrainStep') t.trainAttempts = Math.max(t.trainAttempts, started.attempt ?? 1);
    const done = e.activityTaskCompletedEventAttributes;
    if (done && typeOf.get(String(done.scheduledEventId)) === 'runTrainStep') {
      t.trainCompleted++;
      const r = (await decoded(codecs, done.result?.payloads)) as { step: number; version: number; replayed?: boolean } | undefined;
      if (r) t.trainResult = { step: r.step, version: r.version, replayed: r.replayed === true };
    }
  }
  return t;
}

/** The run's trainStep executions from their histories, and the trainStep children each execution of the run started (continue-as-new chain). */
async function readTrainHistories(client: Client, loaded: LoadedConfig, runId: string, runStartMs: number, stepsDone: number, settleS: number): Promise<Pick<RunRecords, 'trainSteps' | 'trainStepStarts'>> {
  const codecs = dataConverterOf(loaded.config)?.payloadCodecs ?? [];
  // Visibility lags a little behind the histories: wait until the steps the run did are listed (`settleS` only guards a hang).
  const deadline = Date.now() + settleS * 1000;
  let steps = await executionsOf(client, `RollflowRunId = '${runId}' AND RollflowKind = 'trainStep'`, runStartMs);
  while (steps.length < stepsDone && Date.now() < deadline) {
    await sleep(500);
    steps = await executionsOf(client, `RollflowRunId = '${runId}' AND RollflowKind = 'trainStep'`, runStartMs);
  }
  const runs = (await executionsOf(client, `WorkflowId = '${runId}'`, runStartMs)).sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
  const trainStepStarts: string[] = [];
  for (const w of runs) {
    const { events } = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
    for (const e of events ?? []) {
      const c = e.startChildWorkflowExecutionInitiatedEventAttributes;
      if (c?.workflowType?.name === 'trainStep' && c.workflowId) trainStepStarts.push(c.workflowId);
    }
  }
  const trainSteps: TrainStepExecution[] = [];
  for (const w of steps) trainSteps.push(await describeTrainStep(client, codecs, w)); // one at a time: the server is shared with what runs next
  return { trainSteps: trainSteps.sort((a, b) => a.step - b.step), trainStepStarts };
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
  const engines = launchedEngines(loaded);
  const trainer = engines.find((e) => e.role === 'trainer');
  const env = engines.find((e) => e.role === 'env');
  const actionLog = env ? { ...stateDirOptions(env), ...env.options }.action_log : undefined; // what dev up gave it
  return {
    runId,
    outcome,
    ...(final ? { final: { step: final.step, version: final.version, buffered: final.buffered, running: final.running, totals: final.totals } } : {}),
    metrics: readMetrics(loaded, runId),
    batches: readBatches(loaded, runId),
    sampleUids: readSampleUids(loaded, runId),
    groups: await Promise.all(groups.map((w) => describeGroup(client, w, runClosedAt))),
    trainerLog: readTrainerLog(trainer ? trainerStepLog(trainer) : undefined, runId),
    ...(await readTrainHistories(client, loaded, runId, runStartMs, final?.step ?? 0, settleS)),
    skippedStates: readSkippedStates(loaded, runId),
    tornFiles: readTornFiles([runDataDir(loaded.derived.run_dir, runId), path.join(storeDirectory(loaded.derived.sample_store, 'rollflow chaos'), runId)]),
    ...(typeof actionLog === 'string' ? { envActions: readEnvActions(actionLog) } : {}),
  };
}
