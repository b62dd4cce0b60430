// The env server lost inside a run (on_env_loss), on a real dev server with sim inference and trainer and the
// python env server playing frozen_lake (3 turns): the run is suspended with episodes open between turns, the env
// server is killed with SIGKILL, the run resumes (its env steps wait for the server, using up no retry attempt), and
// an operator brings the server back with `rollflow dev up` (the stack runs with --no-supervise, so nothing else
// does). Every check reads what the run recorded: its status, its step records, the batch files
// the trainer read, the workflows' pending activities and results. Never elapsed time.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/configs';
import { batchDir, groupUid, METRIC, runDataDir, sampleUid } from '../../src/core';
import { liveWorkerBeats } from '../../src/stack/worker';
import { status as statusQuery, suspend, type RunStatus } from '../../src/workflows/run';
import type { GroupResult } from '../../src/workflows/run-state';
import { freePort, readJsonl, ROOT, TestDevServer, until } from './helpers/dev-server';

const G = 4;
const B = 2 * G;
const STEPS = 4;
let server: TestDevServer;
let config: string;
let client: Client;
let envUrl: string;
let envPort: number;

const rollflow = (...args: string[]) => server.rollflow(args, 600_000);

/** Env sessions the env server holds open now (frozen_lake episodes begun and not done). */
async function openSessions(): Promise<number> {
  const text = await (await fetch(`${envUrl}/metrics`)).text();
  return Number(/^rollflow_env_sessions_open\{env="frozen_lake"\} (\S+)$/m.exec(text)?.[1] ?? 0);
}

/** Calls the worker waits on for the env server, as its beat file names them (src/activities/engine-wait.ts). */
function envCallsWaiting(): number {
  const [beat] = liveWorkerBeats(parseConfig({ temporal: { task_queue: 'env-loss-test' } }, 'env-loss.yaml'), server.stateDir);
  const waiting = (beat?.waitingFor ?? []).find((w) => w.startsWith(`env ${envUrl} `));
  return waiting ? Number(/(\d+) calls?\)$/.exec(waiting)![1]) : 0;
}

/** Env steps of the run's trajectories on a second attempt or later: an outage must use none up. */
async function envStepsRetrying(runId: string): Promise<number> {
  let n = 0;
  for await (const wf of client.workflow.list({ query: `RollflowRunId = "${runId}" AND RollflowKind = "trajectory" AND ExecutionStatus = "Running"` })) {
    const { raw } = await client.workflow.getHandle(wf.workflowId, wf.runId).describe();
    // An env step is its own activity, or the second half of a turn activity (env_calls auto).
    n += (raw.pendingActivities ?? []).filter((a) => ['envStep', 'playTurn'].includes(a.activityType?.name ?? '') && (a.attempt ?? 0) >= 2).length;
  }
  return n;
}

/** Every sample the trainer read for a run (its batch files). */
function trainedSamples(runId: string): { uid: string; loss_mask: number[] }[] {
  const dir = path.join(server.stateDir, 'run', 'samples', batchDir(runId));
  return readdirSync(dir).sort().flatMap((f) => readJsonl<{ uid: string; loss_mask: number[] }>(path.join(dir, f)));
}
const trainedUids = (runId: string) => trainedSamples(runId).map((s) => s.uid);

const stepRecords = (runId: string) => readJsonl<Record<string, number | string>>(path.join(runDataDir(path.join(server.stateDir, 'run'), runId), 'metrics.jsonl')).filter((r) => r.run_id === runId);
const summed = (runId: string, key: string) => stepRecords(runId).reduce((n, r) => n + Number(r[key] ?? 0), 0);

/**
 * Starts a run, holds it (suspended, generations frozen) while episodes are open between turns, kills the env server
 * with SIGKILL, resumes, waits until env steps are retrying against the dead server, and brings the server back as an
 * operator would. Returns the run's final status.
 */
async function loseEnvMidEpisode(runId: string, ...sets: string[]): Promise<RunStatus> {
  const started = rollflow('run', config, '--run-id', runId, '--set', `max_steps=${STEPS}`, ...sets.flatMap((s) => ['--set', s]));
  expect(started.status, started.stderr).toBe(0);
  const handle = client.workflow.getHandle(runId);
  await until(async () => ((await handle.query(statusQuery)).step >= 1 ? true : undefined), 'step 1 trained');
  // Signalled from here, not by the CLI: the run's last three steps (multi-turn episodes with a real decode cost)
  // could end in the second the command takes to start, and the run would finish before it is held. run.test
  // suspends with the CLI.
  await handle.signal(suspend);
  await until(async () => {
    const st = await handle.query(statusQuery);
    return st.suspended && st.enginesPaused && (await openSessions()) > 0 ? true : undefined;
  }, 'suspended with episodes open between turns');
  const atKill = await handle.query(statusQuery);
  expect(atKill.step).toBeLessThan(STEPS);

  await server.killEngine('env', envUrl);
  expect(rollflow('resume', runId, '--config', config).status).toBe(0);
  // While the server is down the env steps wait for it: not failed, and no retry attempt used.
  await until(async () => (envCallsWaiting() > 0 ? true : undefined), 'env steps waiting for the dead server');
  expect(await envStepsRetrying(runId)).toBe(0);
  expect((await handle.query(statusQuery)).totals.infraFailedGroups).toBe(0);

  const up = rollflow('dev', 'up', config, '--no-supervise');
  expect(up.status, up.stderr).toBe(0);
  expect(up.stdout).toContain(`engine-env-${envPort}: started`);
  const final = await handle.result();
  expect(final.step).toBe(STEPS);
  return handle.query(statusQuery);
}

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const [inference, trainer] = [await freePort(), await freePort()];
  envPort = await freePort();
  envUrl = `http://127.0.0.1:${envPort}`;
  ({ config, client } = await server.upStack(
    `
exp_name: env-loss-test
run_dir: ${server.stateDir}/run
async_generation_ratio: 1
dataset_size: 64
custom_envs:
  lake: { env_type: frozen_lake, max_steps: 3, max_tokens_per_step: 16, env_config: { max_turns: 3, map_size: 4 } }
train_env_manager: { num_env_groups: 2, group_size: ${G}, tags: [lake] }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: env-loss-test }
engines:
  # a real decode cost, so episodes spend their time generating, between env steps
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: { sim: { c0: 0.05, c1: 0.002, length: { dist: lognormal, mean: 12, sigma: 0.5 } } } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim, options: { sim_seconds_per_sample: 0.02 } }
  env: { url: "${envUrl}" }
`,
    { supervise: false },
  ));
});

afterAll(() => server?.downStack(config, client));

describe('env server lost mid-episode', () => {
  it('replay (frozen_lake\'s declaration): the run completes, every step trained once, the lost sessions rebuilt and counted', async () => {
    const st = await loseEnvMidEpisode('replayed');
    const uids = trainedUids('replayed');
    expect(uids).toHaveLength(STEPS * B);
    expect(new Set(uids).size).toBe(STEPS * B);
    expect(st.totals).toMatchObject({ infraFailedGroups: 0, failedGroups: 0, envRestarts: 0 });
    expect(st.totals.envReplays).toBeGreaterThan(0);
    expect(summed('replayed', METRIC.envReplayed)).toBeGreaterThan(0);
    expect(stepRecords('replayed').map((r) => r.step)).toEqual([...Array(STEPS).keys()]);
    // The env servers' own record (dev up gives each an action log under the state dir; the killed one and the one
    // brought back append to the same file): steps were applied, none twice. A rebuilt episode is a new session.
    const applied = readJsonl<{ session: string; index: number }>(path.join(server.stateDir, 'env-actions', `engine-env-${envPort}.jsonl`)).map((l) => `${l.session}#${l.index}`);
    expect(applied.length).toBeGreaterThan(0);
    expect(new Set(applied).size).toBe(applied.length);
  });

  it('restart: the lost episodes start over from turn 0; the run completes, every step trained once, no sample holds more than one episode', async () => {
    const st = await loseEnvMidEpisode('restarted', 'custom_envs.lake.on_env_loss=restart');
    expect(st.totals).toMatchObject({ infraFailedGroups: 0, failedGroups: 0, envReplays: 0 });
    expect(st.totals.envRestarts).toBeGreaterThan(0);
    expect(summed('restarted', METRIC.envRestarted)).toBeGreaterThan(0);
    const samples = trainedSamples('restarted');
    expect(new Set(samples.map((x) => x.uid)).size).toBe(STEPS * B);
    // At most max_steps (3) generated stretches each: the discarded turns of a lost episode never reach the sample.
    const stretches = (mask: number[]) => mask.filter((m, i) => m === 1 && mask[i - 1] !== 1).length;
    expect(Math.max(...samples.map((x) => stretches(x.loss_mask)))).toBeLessThanOrEqual(3);
  });

  it('drop: the lost episodes fail as infrastructure failures, counted apart; none of their samples is in a batch file', async () => {
    const st = await loseEnvMidEpisode('dropped', 'custom_envs.lake.on_env_loss=drop', 'max_failed_group_ratio=1');
    expect(st.totals.failedGroups).toBe(0);
    expect(st.totals.infraFailedGroups).toBeGreaterThan(0);
    expect(st.totals.infraFailedSamples).toBe(st.totals.infraFailedGroups * G);
    expect(st.totals.envReplays).toBe(0);
    expect(summed('dropped', METRIC.infraFailed)).toBeGreaterThan(0);
    // The groups that reported an infrastructure failure, from their own results.
    const dropped: GroupResult[] = [];
    for await (const wf of client.workflow.list({ query: `RollflowRunId = "dropped" AND RollflowKind = "group" AND ExecutionStatus = "Completed"` })) {
      const r = (await client.workflow.getHandle(wf.workflowId, wf.runId).result()) as GroupResult;
      if (r.error !== undefined) dropped.push(r);
    }
    expect(dropped).toHaveLength(st.totals.infraFailedGroups);
    expect(dropped.every((g) => g.infra === true && /no longer has session/.test(g.error!))).toBe(true);
    const uids = trainedUids('dropped');
    expect(uids).toHaveLength(STEPS * B);
    expect(new Set(uids).size).toBe(STEPS * B);
    const lost = dropped.flatMap((g) => Array.from({ length: G }, (_, i) => sampleUid(groupUid(g), i)));
    expect(uids.filter((u) => lost.includes(u))).toEqual([]);
  });
});
