// Upgrading the worker during a run: a run started on build A (this checkout's
// dist/) goes on when its worker is SIGKILLed and a worker of build B takes the
// task queue. B is this checkout's src/ with one workflow-logic change behind
// `patched()`, compiled by the test (helpers/patched-build.ts): before the
// trainer records a step, the run upserts its memo (a command A never issues)
// and marks the step's metrics record. B replays A's history on the old path
// (no marker there) and takes the new one from its first live step, so the
// steps split between the two builds at the kill. The same change without the
// guard cannot replay the history A left: the reason for the patch.
// Nothing here is mocked: dev server, sim engines and both workers are real
// processes brought up by `rollflow dev up` (A) and `rollflow worker` (B).
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { checkRun, expectations } from '../../src/chaos';
import { readMetrics, readRunRecords } from '../../src/chaos/records';
import { connectClient } from '../../src/client/connect';
import { loadConfig, type LoadedConfig } from '../../src/configs';
import { runDataDir } from '../../src/core';
import { startRun } from '../../src/launch/run';
import { down, up } from '../../src/stack';
import { isAlive, livePid, startDetached, waitUntil } from '../../src/stack/processes';
import { stopSupervisor } from '../../src/stack/supervisor';
import { pollers, workerProcess } from '../../src/stack/worker';
import { readJsonl, ROOT, TestDevServer, until } from './helpers/dev-server';
import { historiesOf, memoUpserts, nondeterminismFailures, patchMarkers } from './helpers/histories';
import { buildChanged, type ChangedBuild } from './helpers/patched-build';
import { writeSimRunConfig } from './helpers/sim-run-config';

const STEPS = 8;
const KILL_AFTER_STEPS = 2;
const PATCH_ID = 'upgrade-test-step-memo';
const MEMO_FIELD = 'upgradeTestStep';
/** Build B's change, spliced into src/workflows/run.ts before the step's metrics record is appended. */
const CHANGE = {
  file: 'workflows/run.ts',
  beforeLine: 'await appendMetrics.executeWithOptions({ summary: `step',
  patchCall: `patched('${PATCH_ID}')`,
  insert: [
    `    if (patched('${PATCH_ID}')) {`,
    `      upsertMemo({ ${MEMO_FIELD}: batch.step });`,
    `      Object.assign(record, { upgraded_by: 'build-b' });`,
    '    }',
  ].join('\n'),
};

let server: TestDevServer;
let file: string;
let loaded: LoadedConfig;
let buildB: ChangedBuild;
/** The run's history when worker A died: what worker B had to replay. */
let inFlight: { workflowId: string; history: temporal.api.history.v1.IHistory } | undefined;
const log: string[] = [];
const say = (line: string) => log.push(`${new Date().toISOString()} ${line}`);

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  process.env.ROLLFLOW_STATE = server.stateDir; // the stack's pid files, logs and Temporal db (this test file's process only)
  file = await writeSimRunConfig(server, 'upgrade-test', STEPS);
  loaded = loadConfig(file);
  const started = Date.now();
  // Build B compiles while build A's stack comes up.
  [buildB] = await Promise.all([buildChanged(path.join(server.stateDir, 'build-b'), CHANGE), up(loaded, [file], say)]);
  say(`build B and the stack ready after ${((Date.now() - started) / 1000).toFixed(1)} s`);
}, 300_000);

afterAll(async () => {
  if (loaded) await down(loaded, say); // stops worker B too: it runs under the stack's worker pid file
  if (buildB) rmSync(buildB.root, { recursive: true, force: true });
});

it('a run started on build A completes on build B, which takes the patched path from its first live step', { timeout: 300_000 }, async () => {
  const runId = `upgrade-${Date.now()}`;
  await startRun(loaded, [file], { runId }, say, say);
  // Build A's supervisor would start worker A again; a real upgrade replaces it with the worker.
  say(await stopSupervisor(loaded));
  const client = await connectClient(loaded.config);
  try {
    const handle = client.workflow.getHandle(runId);
    const runStartMs = (await handle.describe()).startTime.getTime();
    const proc = workerProcess(loaded);

    // ---- build A trains a few steps, then dies
    await until(async () => (readMetrics(loaded, runId).length >= KILL_AFTER_STEPS ? true : undefined), `${KILL_AFTER_STEPS} steps recorded on build A`);
    const pidA = livePid(proc)!;
    process.kill(pidA, 'SIGKILL');
    await until(async () => (isAlive(pidA) ? undefined : true), `worker A (pid ${pidA}) gone`);
    const killedAt = Date.now();
    const recordedOnA = readMetrics(loaded, runId).length;
    inFlight = { workflowId: runId, history: await handle.fetchHistory() };
    say(`SIGKILL worker A (pid ${pidA}) after ${recordedOnA} steps`);
    expect(recordedOnA, 'steps left for build B to run live').toBeLessThan(STEPS - 1);

    // ---- build B's worker on the same task queue, under the same pid file (dev down stops it)
    const pidB = startDetached(proc, process.execPath, [buildB.cliEntry, 'worker', file]);
    await waitUntil(proc, async () => ((await pollers(client, loaded)).some((id) => id.startsWith(`${pidB}@`)) ? true : undefined), 180_000);
    say(`worker B (pid ${pidB}) polling ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);

    // ---- the run completes, every step trained once
    await handle.result().catch(() => undefined); // closed (how it ended is the checker's first check)
    const records = await readRunRecords(client, loaded, runId, runStartMs);
    say(`run ${records.outcome} ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
    const { checks } = checkRun(records, expectations(loaded));
    expect(checks.filter((c) => !c.ok), log.join('\n')).toEqual([]);

    // ---- no workflow task of the run's tree failed on nondeterminism
    const histories = await historiesOf(client, `RollflowRunId = '${runId}'`);
    expect(histories.some((h) => h.workflowId === runId)).toBe(true);
    expect(histories.length).toBeGreaterThan(STEPS); // the run, its trainStep and group children
    expect(histories.flatMap((h) => nondeterminismFailures(h.history).map((f) => `${h.workflowId} ${f}`))).toEqual([]);

    // ---- the new path ran from B's first live step on, and only there
    const runHistory = histories.find((h) => h.workflowId === runId)!.history;
    const markers = patchMarkers(runHistory, PATCH_ID);
    expect(markers, 'one patch marker, written by worker B').toEqual([{ eventId: expect.any(Number), identity: expect.stringMatching(new RegExp(`^${pidB}@`)) }]);
    const upserts = memoUpserts(runHistory, MEMO_FIELD);
    const firstNew = upserts[0]?.value as number;
    expect(upserts.map((u) => u.value), 'memo upserts: the steps B scheduled').toEqual(Array.from({ length: STEPS - firstNew }, (_, i) => firstNew + i));
    expect(upserts.every((u) => u.eventId > markers[0]!.eventId)).toBe(true);
    // A scheduled the records it wrote before it died, and perhaps the next one; B every later one.
    expect([recordedOnA, recordedOnA + 1]).toContain(firstNew);
    const metrics = readJsonl<{ run_id: string; step: number; upgraded_by?: string }>(path.join(runDataDir(loaded.derived.run_dir, runId), 'metrics.jsonl')).filter((m) => m.run_id === runId);
    expect(metrics.filter((m) => m.upgraded_by === undefined).map((m) => m.step).sort((a, b) => a - b)).toEqual(Array.from({ length: firstNew }, (_, i) => i));
    expect(metrics.filter((m) => m.upgraded_by === 'build-b').map((m) => m.step).sort((a, b) => a - b)).toEqual(upserts.map((u) => u.value));
    expect((await handle.describe()).memo?.[MEMO_FIELD]).toBe(STEPS - 1);
  } finally {
    await client.connection.close();
  }
});

it('the same change without patched() cannot replay the history worker A left: a DeterminismViolationError', { timeout: 120_000 }, async () => {
  expect(inFlight, 'the first test recorded the in-flight history').toBeDefined();
  const { workflowId, history } = inFlight!;
  // The guarded build replays it (what worker B did live) ...
  await expect(Worker.runReplayHistory({ workflowsPath: buildB.workflowsPath }, history, workflowId)).resolves.toBeUndefined();
  // ... the unguarded one issues the memo upsert where A's history scheduled the metrics record.
  const unguarded = Worker.runReplayHistory({ workflowsPath: buildB.unguardedWorkflowsPath }, history, workflowId);
  await expect(unguarded).rejects.toThrow(DeterminismViolationError);
  await expect(unguarded).rejects.toThrow(/ModifyWorkflowProperties.*ActivityTaskScheduled/);
});
