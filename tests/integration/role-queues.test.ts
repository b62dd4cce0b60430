// Role task queues (temporal.route_by_role) on a real dev server: one worker
// per role, each its own process (`rollflow worker --role`), and two env
// workers. The main worker's config names trainer and env servers nobody
// listens at, so a trainer or env call that ran there would wait forever: the
// run can only finish if each call went to its role's queue. Every placement
// is read from the histories (the queue each activity was scheduled on, the
// identity of the worker that started it). Then one env worker is SIGKILLed
// while it runs env steps: Temporal retries them (after their heartbeat
// timeout) on the other, and the run ends with every step trained once.
import { type ChildProcess, spawn } from 'node:child_process';
import { openSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { roleQueues, runDataDir } from '../../src/core';
import { taskQueuePollers } from '../../src/client/run-handle';
import { processAlive } from '../../src/worker/reclaim';
import { status as statusQuery } from '../../src/workflows/run';
import { freePort, readJsonl, readPid, ROOT, TestDevServer, until } from './helpers/dev-server';
import { activityPlacements, historiesOf, workflowTaskIdentities } from './helpers/histories';

const TQ = 'role-queues-test';
const STEPS = 6;
const queues = roleQueues(TQ);
let server: TestDevServer;
let config: string;
let client: Client;
const workers: Record<string, ChildProcess> = {};

const identity = (name: string) => `${workers[name]!.pid}@role-test`;

function startWorker(name: string, role: string, sets: string[] = []): void {
  const args = ['worker', config, '--role', role, ...sets.flatMap((s) => ['--set', s]), '--set', 'temporal.worker.metrics_address=off'];
  const log = openSync(path.join(server.stateDir, 'logs', `role-worker-${name}.log`), 'a');
  const child = spawn(path.join(ROOT, 'bin/rollflow'), args, { env: { ...server.env, ROLLFLOW_LOG_FORMAT: 'json', ROLLFLOW_HOST: 'role-test' }, stdio: ['ignore', log, log] });
  workers[name] = child;
}

const pollers = (queue: string, kind: 'activity' | 'workflow') => taskQueuePollers(client, 'default', queue, kind);

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  ({ config, client } = await server.upStack(
    `
exp_name: role-queues-test
run_dir: ${server.stateDir}/run
max_steps: ${STEPS}
rollout_batch_size: 2
num_return_sequences_in_group: 4
is_num_return_sequences_expand: true
dataset_size: 64
custom_envs:
  slow: { env_type: latency_sim, max_steps: 3, max_tokens_per_step: 8, env_config: { turns: 3, mean_s: 0.4, std_s: 0.2 } }
train_env_manager: { num_env_groups: 2, group_size: 4, tags: [slow] }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: ${TQ}, route_by_role: true }
engines:
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: { sim: { c0: 0.005, length: { dist: fixed, mean: 8 } } } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim }
  env: { url: "http://127.0.0.1:${env}" }
`,
    { supervise: false },
  ));
  // dev up's worker polls every queue; this test places one worker per role instead.
  const devWorker = readPid(path.join(server.stateDir, 'pids', `worker-${TQ}.pid`));
  process.kill(devWorker, 'SIGTERM');
  await until(async () => (processAlive(devWorker) ? undefined : true), 'dev up\'s worker gone'); // (Temporal lists a poller for minutes after it stops)
  const closed = `http://127.0.0.1:${await freePort()}`; // nothing listens there
  startWorker('main', 'main', [`engines.trainer.url=${closed}`, `engines.env.url=${closed}`]);
  startWorker('inference', 'inference');
  startWorker('trainer', 'trainer');
  startWorker('env1', 'env');
  startWorker('env2', 'env');
  await until(async () => ((await pollers(queues.env, 'activity')).length >= 2 && (await pollers(TQ, 'workflow')).includes(identity('main')) && (await pollers(queues.trainer, 'activity')).length > 0 && (await pollers(queues.inference, 'activity')).length > 0 ? true : undefined), 'every role worker polling');
});

afterAll(async () => {
  for (const w of Object.values(workers)) w.kill('SIGKILL');
  await server?.downStack(config, client);
});

it('each engine role\'s calls run on its own queue\'s workers, and a lost env worker\'s steps move to the other', async () => {
  const runId = 'roles';
  const started = server.rollflow(['run', config, '--run-id', runId, '--set', 'temporal.embedded=false'], 120_000);
  expect(started.status, started.stderr).toBe(0);
  const handle = client.workflow.getHandle(runId);

  // Kill env1 while it runs env steps (a pending envStep it started), after the run has trained a step.
  const runningOnEnv1 = async () => {
    if ((await handle.query(statusQuery)).step < 1) return undefined;
    for await (const w of client.workflow.list({ query: `RollflowRunId = '${runId}' AND ExecutionStatus = 'Running'` })) {
      const d = await client.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId: w.workflowId, runId: w.runId } });
      const a = (d.pendingActivities ?? []).find((p) => p.activityType?.name === 'envStep' && p.lastWorkerIdentity === identity('env1') && p.state === 2 /* STARTED */);
      if (a) return { workflowId: w.workflowId, activityId: a.activityId! };
    }
    return undefined;
  };
  const victim = await until(runningOnEnv1, 'an env step running on env1');
  const env1 = identity('env1');
  workers.env1!.kill('SIGKILL');

  const final = await handle.result();
  expect(final.step).toBe(STEPS);
  const metrics = readJsonl<{ run_id: string; step: number }>(path.join(runDataDir(path.join(server.stateDir, 'run'), runId), 'metrics.jsonl')).filter((m) => m.run_id === runId);
  expect(metrics.map((m) => m.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i));

  const histories = await historiesOf(client, `RollflowRunId = '${runId}'`);
  const placements = histories.flatMap((h) => activityPlacements(h.history).map((p) => ({ ...p, workflowId: h.workflowId })));
  const roleOf: Record<string, keyof typeof queues> = { generateTurn: 'inference', generateGroupTurn: 'inference', envReset: 'env', envStep: 'env', initTrainer: 'trainer', resumeTrainer: 'trainer', saveCheckpoint: 'trainer', runTrainStep: 'trainer', exportWeights: 'trainer' };
  const allowed: Record<string, string[]> = { inference: [identity('inference')], trainer: [identity('trainer')], env: [env1, identity('env2')] };
  for (const p of placements) {
    const role = roleOf[p.type];
    expect(p.taskQueue, p.type).toBe(role ? queues[role] : TQ);
    for (const who of p.startedBy) expect(role ? allowed[role] : [identity('main')], `${p.type} started by ${who}`).toContain(who);
  }
  // Each role's calls were there to be placed.
  for (const type of ['generateTurn', 'envReset', 'envStep', 'initTrainer', 'runTrainStep', 'exportWeights', 'syncWeights', 'finishTrajectory', 'writeBatch']) expect(placements.some((p) => p.type === type), type).toBe(true);
  // Workflow tasks ran on the main worker only.
  for (const h of histories) for (const who of workflowTaskIdentities(h.history)) expect(who).toBe(identity('main'));

  // The step env1 was running when it died was retried, and finished, on env2.
  const moved = placements.find((p) => p.workflowId === victim.workflowId && p.activityId === victim.activityId)!;
  expect(moved.startedBy).toEqual([identity('env2')]); // a started event records the attempt that closed it
  expect(moved.attempt).toBeGreaterThan(1);
  expect(moved.closed).toBe('completed');
  // After the kill, env1 started nothing more: every later env call ran on env2.
  expect(placements.filter((p) => roleOf[p.type] === 'env' && p.startedBy.includes(identity('env2'))).length).toBeGreaterThan(0);
}, 900_000);
