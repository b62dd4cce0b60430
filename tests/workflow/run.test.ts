/**
 * The fast tier for the `run` workflow: the real workflows (run, group,
 * trajectory, trainStep) on a real server, with in-memory stub activities
 * (helpers/stubs.ts) instead of engines. Checks read recorded activity calls,
 * query results and history events, never elapsed time; where a test must
 * hold the run at a point, a stub waits on a gate the test opens.
 *
 * Server: TestWorkflowEnvironment.createLocal with the dev server that
 * temporal/ensure-cli.sh builds from the Go module proxy (the time-skipping
 * test server is a download this machine cannot make). These workflows set no
 * timers, so time skipping would change nothing. One server and one worker
 * for the file; each test its own run id.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { WorkflowFailedError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANCELLED_MESSAGE } from '../../src/workflows/failure';
import type { group } from '../../src/workflows/group';
import { childWorkflowId, groupUid, groupWorkflowId, METRIC, parseGroupUid, parseSampleUid, VAL_METRIC } from '../../src/core';
import { IntervalSet } from '../../src/workflows/interval-set';
import { cancelRun, resume, run, status, suspend, syncWeightsUpdate, type RunInput, type RunPlan, type RunStatus } from '../../src/workflows/run';
import { ALL_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';
import { freePort, ROOT } from '../integration/helpers/dev-server';
import { B, DATASET_ROWS, G, testPlan } from './helpers/plan';
import { callCountFrom, callsOf, Gate, groupOf, mostEngineCallsAtOnce, openAllGates, scenario, stubs } from './helpers/stubs';

const taskQueue = 'workflow-tests';
let env: TestWorkflowEnvironment;
let worker: Worker;
let running: Promise<void>;

beforeAll(async () => {
  const cli = execFileSync('bash', [path.join(ROOT, 'temporal/ensure-cli.sh')], { encoding: 'utf8' }).trim();
  env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'existing-path', path: cli }, port: await freePort(), searchAttributes: ALL_SEARCH_ATTRIBUTES },
  });
  worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowsPath: path.join(ROOT, 'src/workflows/index.ts'), activities: stubs });
  running = worker.run();
});

afterAll(async () => {
  openAllGates();
  if (worker) {
    worker.shutdown();
    await running;
  }
  await env?.teardown();
});

const startRun = (plan: RunPlan) => env.client.workflow.start(run, { taskQueue, workflowId: plan.runId, args: [{ plan }] });

/** Polls `probe` until `ok` holds; the bound only turns a hang into a failure. */
async function until<T>(probe: () => Promise<T> | T, ok: (v: T) => boolean, what: string, boundMs = 30_000): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`never held: ${what} (last: ${JSON.stringify(v)})`);
    await pause(25);
  }
}
const statusWhere = (h: WorkflowHandle<typeof run>, ok: (s: RunStatus) => boolean, what: string) => until(() => h.query(status), ok, what);

const events = async (h: WorkflowHandle): Promise<temporal.api.history.v1.IHistoryEvent[]> => (await h.fetchHistory()).events ?? [];
/** Children the execution started, by workflow type. */
async function childStarts(h: WorkflowHandle): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const e of await events(h)) {
    const type = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType?.name;
    if (type) counts[type] = (counts[type] ?? 0) + 1;
  }
  return counts;
}
/** The input an execution continued-as-new with, and the new execution's run id. */
async function continuedWith(h: WorkflowHandle): Promise<{ input: RunInput; next: string }> {
  const attrs = (await events(h)).find((e) => e.workflowExecutionContinuedAsNewEventAttributes)!.workflowExecutionContinuedAsNewEventAttributes!;
  return { input: defaultPayloadConverter.fromPayload<RunInput>(attrs.input!.payloads![0]!), next: attrs.newExecutionRunId! };
}

/** The positions (epoch 0) a set of sample keys trained. */
const positions = (keys: string[]) => [...new Set(keys.map((k) => parseSampleUid(path.basename(k, '.json')).position))];
const asRanges = (ps: number[]) => new IntervalSet(ps.map((p) => [p, p + 1])).toJSON();

describe('run workflow (stub activities)', () => {
  it('suspend holds dispatch and training and pauses the engines; resume finishes the run', async () => {
    const plan = testPlan('suspend');
    const { generate, train } = scenario(plan.runId, { generate: new Gate(false), train: new Gate(false) });
    const h = await startRun(plan);
    // (1 + α)·B = 8 samples: four groups start, each of their 2 trajectories held in generateTurn.
    await until(() => generate.waiting.length, (n) => n === 4 * G, 'four groups generating');
    generate.release((k) => [0, 1].map((position) => groupUid({ epoch: 0, position })).includes(groupOf(k)));
    await until(() => train.waiting, (w) => w.includes('step-0'), 'step 0 training');

    await h.signal(suspend);
    await statusWhere(h, (s) => s.suspended && s.enginesPaused, 'suspended with the engines paused');
    expect(callsOf(plan.runId, 'pauseEngines')).toEqual([{ mode: 'keep' }]);

    // Step 0 finishes: its sync resumes the servers, so the suspended run pauses them again; capacity frees but stays unused.
    train.open();
    let s = await statusWhere(h, (s) => s.step === 1 && s.enginesPaused, 'step 1, engines paused again');
    expect(callsOf(plan.runId, 'pauseEngines')).toHaveLength(2);
    expect(s.samplesInSystem).toBe(B);
    expect(s.maxSamplesInSystem).toBe(2 * B);
    // The other two groups report: a full batch is buffered, and nothing takes it.
    generate.open();
    s = await statusWhere(h, (s) => s.buffered === B, 'a batch buffered');
    expect(s).toMatchObject({ training: false, step: 1, running: 0, suspended: true });
    expect(s.totals.dispatchedGroups).toBe(4);
    expect(await childStarts(h)).toEqual({ group: 4, trainStep: 1 });
    expect(callsOf(plan.runId, 'runTrainStep').map((c) => c.step)).toEqual([0]);
    expect(callsOf(plan.runId, 'resumeEngines')).toHaveLength(0);

    await h.signal(resume);
    const done = await h.result();
    expect(done).toMatchObject({ step: 3, version: 3, suspended: false, enginesPaused: false });
    expect(done.totals.consumedSamples).toBe(3 * B);
    expect(callsOf(plan.runId, 'resumeEngines')).toHaveLength(1);
    expect(callsOf(plan.runId, 'runTrainStep').map((c) => c.step)).toEqual([0, 1, 2]);
  });

  it('stops with RunFailingError when the groups keep failing', async () => {
    const plan = testPlan('failing');
    scenario(plan.runId, { failReset: () => true });
    const h = await startRun(plan);
    const err = await h.result().then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const failure = (err as WorkflowFailedError).cause;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'RunFailingError', nonRetryable: true });
    // The counts are the run's own when it stopped (a query replays the closed run).
    const { totals } = await h.query(status);
    expect(totals.failedGroups).toBeGreaterThanOrEqual(4);
    expect(totals.infraFailedGroups).toBe(0); // a bad env config is not the infrastructure's
    expect(failure!.message).toBe(`${totals.failedGroups} of ${totals.dispatchedGroups} groups failed (0 for infrastructure reasons, ${totals.failedGroups} for others); last error: stub env: no such key "x"`);
    expect(callsOf(plan.runId, 'runTrainStep')).toHaveLength(0);
    // EnvConfigError is non-retryable: the trajectory failed on its first attempt. (Its reset is a local activity under
    // env_calls auto, whose failure reaches the workflow as the activity's own, not wrapped in an ActivityFailure.)
    const trajectoryId = childWorkflowId(groupWorkflowId(plan.runId, { epoch: 0, position: 0 }), 's', 0);
    const tErr = await env.client.workflow.getHandle(trajectoryId).result().then(() => undefined, (e: unknown) => e);
    expect((tErr as WorkflowFailedError).cause).toMatchObject({ type: 'EnvConfigError', message: 'stub env: no such key "x"' });
    expect(callCountFrom(trajectoryId, 'envReset')).toBe(1);
  });

  it('keeps going with max_failed_group_ratio 1 while only some groups fail', async () => {
    // One-request groups here (their env calls are local activities of the group workflow).
    const plan = testPlan('failing-some', { maxSteps: 2, maxFailedGroupRatio: 1, replicate: false });
    // Three groups of every four fail (positions not divisible by 4).
    scenario(plan.runId, { failReset: (id) => parseGroupUid(path.basename(id)).position % 4 !== 0 }); // id: the group workflow's
    const done = await (await startRun(plan)).result();
    expect(done.step).toBe(2);
    // Past the 4-failure floor of the stop rule, under its ratio: the ratio is what kept the run going.
    expect(done.totals.failedGroups).toBeGreaterThanOrEqual(4);
    expect(done.totals.failedGroups).toBeLessThan(done.totals.dispatchedGroups);
    const trained = callsOf(plan.runId, 'writeBatch').flatMap((c) => c.sampleKeys);
    expect(trained).toHaveLength(2 * B);
    expect(positions(trained).filter((p) => p % 4 !== 0)).toEqual([]);
  });

  it('continue-as-new carries every field of the state; the chain trains each sample once', async () => {
    const plan = testPlan('chain', { maxSteps: 3, stepsPerRun: 1 });
    const h = await startRun(plan);
    const done = await h.result();

    const first = env.client.workflow.getHandle(plan.runId, h.firstExecutionRunId);
    const { input: carried, next } = await continuedWith(first);
    const at = await first.query(status); // the first execution, replayed to its end: the state it carried
    const CARRIED: (keyof RunInput)[] = ['dataset', 'enginesPaused', 'owners', 'plan', 'progress', 'snapshot', 'startedAtMs', 'suspended'];
    expect(Object.keys(carried).sort()).toEqual(CARRIED);
    expect(carried.progress?.map((row) => row.step)).toEqual([1]); // the UI's progress table goes on in the next execution
    expect(carried.plan).toEqual(plan);
    expect(carried).toMatchObject({ suspended: at.suspended, enginesPaused: at.enginesPaused, dataset: at.dataset });
    expect(carried.owners).toEqual({});
    expect(at.dataset?.size).toBe(DATASET_ROWS);
    const snap = carried.snapshot!;
    expect(snap).toMatchObject({ step: 1, version: 1, datasetSize: DATASET_ROWS, totals: at.totals, limits: plan.limits, trainingSamples: 0 });
    expect(at).toMatchObject({ step: 1, version: 1 });
    expect(snap.buffer.length * G).toBe(at.buffered);
    expect(snap.inFlight.length * G).toBe(at.running);
    const batches = callsOf(plan.runId, 'writeBatch').map((c) => c.sampleKeys);
    expect(snap.consumed).toEqual([[0, asRanges(positions(batches[0]!))]]);
    expect(snap.totals).toMatchObject({ trainedSamples: B, lastRewardMean: at.totals.lastRewardMean, peakSamplesInSystem: at.totals.peakSamplesInSystem });

    // The second execution adds to the totals and keeps the chain's start.
    const second = await continuedWith(env.client.workflow.getHandle(plan.runId, next));
    expect(second.input).toMatchObject({ startedAtMs: carried.startedAtMs, snapshot: { totals: { trainedSamples: 2 * B } } });
    expect(second.input.snapshot).toMatchObject({ step: 2, version: 2 });

    expect(done).toMatchObject({ step: 3, version: 3 });
    expect(done.totals.consumedSamples).toBe(3 * B);
    expect(callsOf(plan.runId, 'initTrainer')).toHaveLength(1);
    expect(callsOf(plan.runId, 'datasetIndex')).toHaveLength(1);
    expect(callsOf(plan.runId, 'runTrainStep').map((c) => c.step)).toEqual([0, 1, 2]);
    const metrics = callsOf(plan.runId, 'appendMetrics').map((c) => c.record);
    expect(metrics.map((r) => [r.step, r[METRIC.samples]])).toEqual([[0, B], [1, B], [2, B]]);
    // Exactly once across executions: 3·B distinct samples, and the final checkpoint's consumed set is theirs.
    const keys = batches.flat();
    expect(batches).toHaveLength(3);
    expect(new Set(keys).size).toBe(3 * B);
    const [checkpoint] = callsOf(plan.runId, 'saveCheckpoint');
    expect(checkpoint!.manifest).toMatchObject({ step: 3, version: 3, dataset_size: DATASET_ROWS, consumed: [[0, asRanges(positions(keys))]] });
  });

  it('syncWeights update loads operator weights at the current version; an empty path is refused', async () => {
    const plan = testPlan('sync', { maxSteps: 2 });
    const { train } = scenario(plan.runId, { train: new Gate(false) });
    const h = await startRun(plan);
    await until(() => train.waiting, (w) => w.includes('step-0'), 'step 0 training');
    train.release((k) => k === 'step-0');
    await until(() => train.waiting, (w) => w.includes('step-1'), 'step 1 training');
    expect(await h.query(status)).toMatchObject({ step: 1, version: 1 });

    expect(await h.executeUpdate(syncWeightsUpdate, { args: [{ path: '/w/ext' }] })).toEqual({ aborted: 1, version: 1 });
    const refused = await h.executeUpdate(syncWeightsUpdate, { args: [{ path: '' }] }).then(() => undefined, (e: unknown) => e);
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((refused as WorkflowUpdateFailedError).cause?.message).toMatch(/syncWeights needs/);

    train.open();
    expect(await h.result()).toMatchObject({ step: 2, version: 2 });
    // The operator's weights went out between the steps' syncs, and the next step's sync replaced them.
    expect(callsOf(plan.runId, 'syncWeights').map(({ path, version }) => [path, version])).toEqual([['/w/v0', 0], ['/w/v1', 1], ['/w/ext', 1], ['/w/v2', 2]]);
    // A rejected update leaves no trace in history: one update accepted, one completed.
    const updates = (await events(h)).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes || e.workflowExecutionUpdateCompletedEventAttributes);
    expect(updates).toHaveLength(2);
  });

  it('the inference servers take one control sequence at a time: a suspend and an operator sync queued behind a step\'s sync never overlap', async () => {
    const plan = testPlan('engine-lock', { maxSteps: 2 });
    const { sync } = scenario(plan.runId, { sync: new Gate(false) });
    const h = await startRun(plan);
    await until(() => sync.waiting, (w) => w.includes('/w/v0'), 'the initial sync');
    sync.release((k) => k === '/w/v0');
    await until(() => sync.waiting, (w) => w.includes('/w/v1'), "step 0's sync holding the servers");
    // Both wait for the step's sync: the suspend's pause and the operator's sync.
    await h.signal(suspend);
    const operator = h.executeUpdate(syncWeightsUpdate, { args: [{ path: '/w/ext' }] });
    await until(async () => (await events(h)).some((e) => e.workflowExecutionUpdateAcceptedEventAttributes), (accepted) => accepted, 'the update accepted');
    await statusWhere(h, (s) => s.suspended, 'suspended');
    sync.release((k) => k === '/w/v1');
    // Each queued call is held at the gate when it starts; one at a time may have started.
    const queued = new Set(['/w/ext', 'pause']);
    while (queued.size > 0) {
      const started = await until(() => sync.waiting.filter((k) => queued.has(k)), (ks) => ks.length > 0, 'a queued engine call started');
      for (const k of started) queued.delete(k);
      sync.release((k) => started.includes(k));
    }
    sync.open();
    expect(await operator).toEqual({ aborted: 1, version: 1 });
    await statusWhere(h, (s) => s.enginesPaused, 'the engines paused for the suspension');
    await h.signal(resume);
    expect(await h.result()).toMatchObject({ step: 2, enginesPaused: false });
    expect(mostEngineCallsAtOnce(plan.runId)).toBe(1);
  });
});

describe('episode token budget (custom_envs.<tag>.max_tokens_per_episode)', () => {
  const modes: [string, Partial<RunPlan>][] = [
    ['trajectory workflows', {}],
    ['lockstep', { rolloutMode: 'lockstep' }],
  ];

  it.each(modes)('(%s) each turn may generate what is left of the budget, and the episode ends once it is spent', async (name, over) => {
    const plan = testPlan(`budget-${name.replace(/\W/g, '')}`, { maxSteps: 1, ...over });
    // An env that never ends an episode itself within 10 turns; the stub model writes 3 tokens a turn.
    plan.envs = plan.envs.map((e) => ({ ...e, spec: { ...e.spec, maxTurns: 10, maxEpisodeTokens: 7 } }));
    scenario(plan.runId, { episodeSteps: 10 });
    const done = await (await startRun(plan)).result();
    expect(done.step).toBe(1);
    const turns = callsOf(plan.runId, 'generateTurn');
    const dispatched = done.totals.dispatchedGroups * G;
    // Budget 7 at 3 tokens a turn: caps 7, 4, 1 (turn 2 spends it), then the episode is over.
    expect(turns.map((t) => t.sampling.max_tokens).sort()).toEqual(Array.from({ length: dispatched }, () => [1, 4, 7]).flat().sort());
    expect(callsOf(plan.runId, 'envStep')).toHaveLength(3 * dispatched);
    // The env's last info (the stub counts its steps) reaches the step record as env/<key>; text does not.
    const [record] = callsOf(plan.runId, 'appendMetrics').filter((c) => (c.file ?? 'metrics.jsonl') === 'metrics.jsonl').map((c) => c.record);
    expect(record).toMatchObject({ 'env/steps': 3 });
    expect(record).not.toHaveProperty('env/task');
  });

  it('without a budget the same episodes run to max_steps at the per-turn cap', async () => {
    const plan = testPlan('budget-none', { maxSteps: 1 });
    plan.envs = plan.envs.map((e) => ({ ...e, spec: { ...e.spec, maxTurns: 4 } }));
    scenario(plan.runId, { episodeSteps: 10 });
    const done = await (await startRun(plan)).result();
    const dispatched = done.totals.dispatchedGroups * G;
    expect(callsOf(plan.runId, 'generateTurn').map((t) => t.sampling.max_tokens)).toEqual(Array.from({ length: 4 * dispatched }, () => 8));
  });
});

describe('chat-message prompts (EnvReset.messages)', () => {
  const messages = [{ role: 'system', content: 'Answer with a number.' }, { role: 'user', content: '1+1=' }];
  const modes: [string, Partial<RunPlan>, number][] = [
    ['trajectory workflows', {}, 2],
    ['lockstep', { rolloutMode: 'lockstep' }, 2],
    ['one request per group', { replicate: false }, 1],
  ];

  it.each(modes)('(%s) the reset\'s messages reach turn 0\'s generation, and only turn 0\'s', async (name, over, turns) => {
    const plan = testPlan(`messages-${name.replace(/\W/g, '')}`, { maxSteps: 1, ...over });
    plan.envs = plan.envs.map((e) => ({ ...e, spec: { ...e.spec, maxTurns: turns } }));
    scenario(plan.runId, { messages, episodeSteps: turns });
    const done = await (await startRun(plan)).result();
    const dispatched = done.totals.dispatchedGroups * G;
    const generated = [...callsOf(plan.runId, 'generateTurn'), ...callsOf(plan.runId, 'generateGroupTurn').map((g) => ({ ...g, turn: 0 }))];
    expect(generated.length).toBeGreaterThan(0);
    for (const call of generated) expect([call.turn, call.messages]).toEqual(call.turn === 0 ? [0, messages] : [call.turn, undefined]);
    if (turns === 2) expect(generated.filter((c) => c.turn === 1)).toHaveLength(dispatched);
  });
});

describe('env loss (on_env_loss) and infrastructure failures', () => {
  /** A metric summed over the run's step records. */
  const summed = (runId: string, key: string) => callsOf(runId, 'appendMetrics').reduce((n, c) => n + Number(c.record[key] ?? 0), 0);
  const trained = (runId: string) => callsOf(runId, 'writeBatch').flatMap((c) => c.sampleKeys);
  const modes: [string, Partial<RunPlan>][] = [
    ['trajectory workflows', {}],
    ['one-request groups', { replicate: false }],
    ['lockstep', { rolloutMode: 'lockstep' }],
  ];

  it.each(modes)('restart (%s): a lost episode starts over from turn 0 on a fresh session, is trained once, and is counted', async (name, over) => {
    const plan = testPlan(`restart-${name.replace(/\W/g, '')}`, { maxSteps: 2, ...over });
    plan.envs = plan.envs.map((e) => ({ ...e, spec: { ...e.spec, onLoss: 'restart' } })); // the config's choice wins over the env's
    scenario(plan.runId, { declares: 'replay', loseSessions: 2 });
    const done = await (await startRun(plan)).result();
    expect(done.step).toBe(2);
    expect(done.totals).toMatchObject({ envRestarts: 2, envReplays: 0, infraFailedGroups: 0, failedGroups: 0 });
    // Two more resets than trajectories, and each restart generated its turn 0 again.
    const trajectories = done.totals.dispatchedGroups * G;
    expect(callsOf(plan.runId, 'envReset')).toHaveLength(trajectories + 2);
    expect(callsOf(plan.runId, 'envStep').every((c) => c.onLoss === 'restart')).toBe(true);
    expect(callsOf(plan.runId, 'generateTurn').filter((c) => c.turn === 0)).toHaveLength((over.replicate === false ? 0 : trajectories) + 2);
    expect(summed(plan.runId, METRIC.envRestarted)).toBe(2);
    expect(trained(plan.runId)).toHaveLength(2 * B);
    expect(new Set(trained(plan.runId)).size).toBe(2 * B);
  });

  it('replay, as the env declares: the activity rebuilt the session (the workflow passes the declared policy); counted, nothing started over', async () => {
    const plan = testPlan('replay-declared', { maxSteps: 2 });
    scenario(plan.runId, { declares: 'replay', loseSessions: 2 });
    const done = await (await startRun(plan)).result();
    expect(done.totals).toMatchObject({ envReplays: 2, envRestarts: 0, infraFailedGroups: 0 });
    expect(callsOf(plan.runId, 'envStep').every((c) => c.onLoss === 'replay')).toBe(true);
    expect(callsOf(plan.runId, 'envReset')).toHaveLength(done.totals.dispatchedGroups * G);
    expect(summed(plan.runId, METRIC.envReplayed)).toBe(2);
    expect(trained(plan.runId)).toHaveLength(2 * B);
  });

  it('drop, as the env declares: the trajectory fails as an infrastructure failure; its group is counted apart and never trained', async () => {
    const plan = testPlan('drop-declared', { maxSteps: 2 });
    scenario(plan.runId, { declares: 'drop', loseSessions: 1 });
    const done = await (await startRun(plan)).result();
    expect(done.step).toBe(2);
    expect(done.totals).toMatchObject({ infraFailedGroups: 1, infraFailedSamples: G, failedGroups: 0, envRestarts: 0, envReplays: 0 });
    expect(summed(plan.runId, METRIC.infraFailed)).toBe(G);
    // Five groups started for the two batches' four: the one whose session was lost is in no batch.
    expect(done.totals.dispatchedGroups).toBe(5);
    expect(trained(plan.runId)).toHaveLength(2 * B);
    expect(positions(trained(plan.runId))).toHaveLength(4);
  });
});

describe('cancelRun (rollflow cancel)', () => {
  it('ends the run after the step in progress: nothing more is trained, a checkpoint is saved, groups in flight are cancelled', async () => {
    const plan = testPlan('cancel', { maxSteps: 10, tracking: { trackWith: ['tensorboard'], kwargs: {}, hparams: {} } });
    const { train } = scenario(plan.runId, { train: new Gate(false) });
    const h = await startRun(plan);
    await until(() => train.waiting, (w) => w.includes('step-0'), 'step 0 training');
    train.release((k) => k === 'step-0');
    await until(() => train.waiting, (w) => w.includes('step-1'), 'step 1 training');
    await h.signal(cancelRun);
    train.open(); // step 1, already training, finishes
    const done = await h.result();
    expect(done.step).toBe(2);
    expect(done.cancelled).toEqual({ atStep: 2, groupsInFlight: expect.any(Number) as number });
    expect(callsOf(plan.runId, 'runTrainStep').map((c) => c.step)).toEqual([0, 1]);
    expect(callsOf(plan.runId, 'saveCheckpoint').map((c) => c.manifest.step)).toEqual([2]);
    // The trackers close, as after a run's last record (none of the records sent was marked final).
    expect(callsOf(plan.runId, 'appendMetrics').map((c) => c.final ?? false)).toEqual([false, false]);
    expect(callsOf(plan.runId, 'closeTracking')).toEqual([{ runId: plan.runId }]);
    // Every group dispatched is trained, still in flight (cancelled at the end), or buffered: none vanished.
    expect(done.totals.dispatchedGroups * G).toBe(done.totals.consumedSamples + done.running + done.buffered + done.totals.filteredGroups * G);
  });
});

describe('cancelRun on a suspended run', () => {
  it('ends it at once: nothing trained, no checkpoint of nothing, the groups held generating cancelled, the inference servers resumed', async () => {
    const plan = testPlan('cancel-suspended', { maxSteps: 10 });
    const { generate } = scenario(plan.runId, { generate: new Gate(false) });
    const h = await startRun(plan);
    await until(() => generate.waiting.length, (n) => n === 4 * G, 'four groups generating');
    await h.signal(suspend);
    await statusWhere(h, (s) => s.suspended && s.enginesPaused, 'suspended with the engines paused');
    await h.signal(cancelRun);
    const done = await h.result();
    expect(done).toMatchObject({ step: 0, running: 4 * G, buffered: 0, suspended: true, enginesPaused: false, cancelled: { atStep: 0, groupsInFlight: 4 } });
    expect(callsOf(plan.runId, 'runTrainStep')).toEqual([]);
    expect(callsOf(plan.runId, 'saveCheckpoint')).toEqual([]);
    expect(callsOf(plan.runId, 'pauseEngines')).toHaveLength(1);
    expect(callsOf(plan.runId, 'resumeEngines')).toHaveLength(1);
    // The groups in flight are accounted for: each of the four closed, saying it was cancelled, nothing stored or trained.
    const results = await Promise.all([0, 1, 2, 3].map((position) => env.client.workflow.getHandle<typeof group>(groupWorkflowId(plan.runId, { epoch: 0, position })).result()));
    expect(results.map((r) => ({ accepted: r.accepted, storeKeys: r.storeKeys, error: r.error }))).toEqual(Array(4).fill({ accepted: false, storeKeys: [], error: CANCELLED_MESSAGE }));
    expect(callsOf(plan.runId, 'writeBatch')).toEqual([]);
    expect(callsOf(plan.runId, 'closeTracking')).toEqual([]); // no trackers configured
  });
});

describe('the memo `rollflow list` reads (no query, no worker)', () => {
  it('holds the latest step reward and validation reward after each step, across continue-as-new', async () => {
    const validation = { envs: [{ tag: 'stub', groupsPerStep: 1, spec: { type: 'stub', config: {}, maxTurns: 1 }, maxTokens: 8 }], groupSize: G, everySteps: 2 };
    // Validations at steps 0, 2 and 3 (the end); the first execution trains two steps, then continues as new.
    const plan = testPlan('memo', { maxSteps: 3, stepsPerRun: 2, validation });
    let envSteps = 0;
    scenario(plan.runId, { rewardBonus: () => 2 ** envSteps++ }); // sums of distinct powers of two never coincide
    const h = await startRun(plan);
    await h.result();
    const appended = callsOf(plan.runId, 'appendMetrics');
    const steps = appended.filter((c) => (c.file ?? 'metrics.jsonl') === 'metrics.jsonl').map((c) => c.record);
    const vals = appended.filter((c) => c.file === 'validation.jsonl').map((c) => c.record);
    expect(steps.map((r) => r.step)).toEqual([0, 1, 2]);
    expect(vals.map((r) => r.step)).toEqual([0, 2, 3]);
    const rewards = steps.map((r) => r[METRIC.rewardMean]);
    expect(new Set(rewards).size).toBe(3); // each step its own reward: the memo's can only match one step
    const memoOf = (stepIndex: number, valIndex: number) => ({ [METRIC.rewardMean]: rewards[stepIndex], [VAL_METRIC.rewardMean]: vals[valIndex]![VAL_METRIC.rewardMean] });

    const first = env.client.workflow.getHandle(plan.runId, h.firstExecutionRunId);
    expect((await first.describe()).memo).toEqual(memoOf(1, 1));
    const { next } = await continuedWith(first);
    // The server hands the memo to the next execution: listed before its first step, the run still shows its reward.
    const started = (await events(env.client.workflow.getHandle(plan.runId, next)))[0]!.workflowExecutionStartedEventAttributes!;
    const carried = Object.fromEntries(Object.entries(started.memo?.fields ?? {}).map(([k, p]) => [k, defaultPayloadConverter.fromPayload(p)]));
    expect(carried).toEqual(memoOf(1, 1));
    expect((await h.describe()).memo).toEqual(memoOf(2, 2));
  });
});

describe('what the Temporal UI shows (user metadata and current details)', () => {
  /** A workflow's current details: the SDK answers the built-in metadata query from workflow state. */
  const currentDetails = async (id: string): Promise<string> => {
    const metadata = await env.client.workflow.getHandle(id).query<temporal.api.sdk.v1.IWorkflowMetadata>('__temporal_workflow_metadata');
    return metadata.currentDetails ?? '';
  };
  const summaries = async (id: string): Promise<string[]> =>
    (await events(env.client.workflow.getHandle(id))).flatMap((e) => (e.userMetadata?.summary ? [defaultPayloadConverter.fromPayload<string>(e.userMetadata.summary)] : []));

  it('the run shows its progress table; groups, trajectories and their calls are summarised; a trajectory shows its prompt, response and reward', async () => {
    const plan = testPlan('ui-metadata', { maxSteps: 2 });
    const done = await (await startRun(plan)).result();
    expect(done.step).toBe(2);

    const runDetails = await currentDetails(plan.runId);
    expect(runDetails).toMatch(/\| step \| version \| reward \| validation reward \|/);
    // A row per step, the newest first.
    expect(runDetails.indexOf('| 2 of 2 | v2 |')).toBeGreaterThan(0);
    expect(runDetails.indexOf('| 2 of 2 | v2 |')).toBeLessThan(runDetails.indexOf('| 1 of 2 | v1 |'));
    const runSummaries = await summaries(plan.runId);
    expect(runSummaries).toContain('e0-p0 · stub · v0');
    expect(runSummaries).toContain(`step 0 · ${B} samples · v0→v1`); // the train step child
    expect(runSummaries).toContain('step 0 · v1 to the inference servers'); // its weight sync
    expect(runSummaries.filter((s) => /^step 1 · reward \d\.\d{3}$/.test(s))).toHaveLength(1); // its metrics record

    // Member 1 of group e0-p0: the stub env's prompt is "prompt <seed>", its reward the member index.
    const groupId = groupWorkflowId(plan.runId, { epoch: 0, position: 0 });
    // A workflow's own summary (on its started event), then its children's.
    expect(await summaries(groupId)).toEqual(['e0-p0 · stub · v0', 'e0-p0-s0 · stub', 'e0-p0-s1 · stub']);
    const trajectoryId = childWorkflowId(groupId, 's', 1);
    const details = await currentDetails(trajectoryId);
    expect(details).toMatch(/^### e0-p0-s1 · stub · reward \*\*1\*\* · 1 turn/);
    expect(details).toMatch(/\*\*Prompt\*\*\n\n```text\nprompt \d+\n```/);
    expect(details).toContain('**Response, turn 0** · 3 tokens');
    expect(details).toContain('```text\nanswer\n```');
    // A turn is one activity (env_calls auto in a trajectory workflow): its generation and its env step.
    expect(await summaries(trajectoryId)).toEqual(['e0-p0-s1 · stub', expect.stringMatching(/^e0-p0-s1 · stub · seed \d+$/), 'e0-p0-s1 · turn 0 · ≤8 tokens, then the env step', 'e0-p0-s1 · reward 1']);
  });

  it('trajectory_workflows false: a group runs its trajectories itself, with the same calls and samples, and shows each on its page', async () => {
    const own = testPlan('trajectories-own', { maxSteps: 2 });
    const inline = testPlan('trajectories-inline', { maxSteps: 2, inlineTrajectories: true });
    const [ownDone, inlineDone] = await Promise.all([startRun(own).then((h) => h.result()), startRun(inline).then((h) => h.result())]);
    expect(inlineDone).toMatchObject({ step: 2, version: 2 });
    expect(inlineDone.totals.consumedSamples).toBe(ownDone.totals.consumedSamples);

    const groupId = groupWorkflowId(inline.runId, { epoch: 0, position: 0 });
    expect(await childStarts(env.client.workflow.getHandle(groupId))).toEqual({});
    expect((await childStarts(env.client.workflow.getHandle(groupWorkflowId(own.runId, { epoch: 0, position: 0 })))).trajectory).toBe(G);
    // Each member's turn and sample write, made by the group's workflow itself; each sample written once, with the member's reward.
    expect(callCountFrom(groupId, 'playTurn')).toBe(G);
    const written = callsOf(inline.runId, 'finishTrajectory').map((c) => c.uid);
    expect(new Set(written).size).toBe(written.length);
    expect(written).toEqual(expect.arrayContaining(Array.from({ length: G }, (_, i) => `e0-p0-s${i}`)));
    for (const c of callsOf(inline.runId, 'finishTrajectory')) expect(c.reward).toBe(Number(/-s(\d+)$/.exec(c.uid)![1]));

    // The group's page: each trajectory's calls named by its uid, and each one's transcript.
    expect(await summaries(groupId)).toEqual(expect.arrayContaining(['e0-p0 · stub · v0', 'e0-p0-s0 · turn 0 · ≤8 tokens, then the env step', 'e0-p0-s1 · turn 0 · ≤8 tokens, then the env step', 'e0-p0-s1 · reward 1']));
    const details = await currentDetails(groupId);
    for (let i = 0; i < G; i++) expect(details).toMatch(new RegExp(`### e0-p0-s${i} · stub · reward \\*\\*${i}\\*\\* · 1 turn`));
  });
});
