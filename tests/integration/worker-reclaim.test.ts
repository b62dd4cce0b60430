// A worker restarted on its host reclaims the calls its dead predecessor had
// started: each is failed at once (retryable, WorkerLostError) with its last
// heartbeat details kept, so the retry runs now, not after the heartbeat
// timeout, and resumes from what the dead attempt reported. The "dead" worker
// is a live in-process worker whose identity names a pid no process can have;
// the call's ten-minute heartbeat timeout means only the reclaim retries it.
import { hostname } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { localPid, reclaimFromDeadWorkers } from '../../src/worker/reclaim';
import { TestDevServer, until } from './helpers/dev-server';
import { oneLongCall } from './workflows';

const taskQueue = 'reclaim-test';
const DEAD_PID = 4_194_305; // above the kernel's largest pid_max: no process has it
const progress = { tokens: [11, 12, 13] };
let server: TestDevServer;
let client: Client;

beforeAll(async () => {
  server = await TestDevServer.create();
  server.start();
  client = new Client({ connection: await Connection.connect({ address: server.address }) });
});
afterAll(async () => {
  await client?.connection.close();
  server?.stop();
});

it('fails the dead worker’s started call at once, and the retry resumes from its heartbeat details', async () => {
  const attempts: number[] = [];
  const activities = {
    async heartbeatUntilRetried(): Promise<unknown> {
      const ctx = Context.current();
      attempts.push(ctx.info.attempt);
      if (ctx.info.attempt > 1) return ctx.info.heartbeatDetails;
      // The first attempt beats its progress until the server says it is no longer this attempt's.
      const beat = setInterval(() => ctx.heartbeat(progress), 200);
      try {
        return await ctx.cancelled;
      } catch {
        return 'superseded';
      } finally {
        clearInterval(beat);
      }
    },
  };
  const connection = await NativeConnection.connect({ address: server.address });
  const identity = `${DEAD_PID}@${hostname()}`;
  const worker = await Worker.create({ connection, taskQueue, identity, activities, workflowsPath: path.join(__dirname, 'workflows/index.ts') });
  try {
    await worker.runUntil(async () => {
      const handle = await client.workflow.start(oneLongCall, { taskQueue, workflowId: `reclaim-${Date.now()}` });
      const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
      await until(async () => {
        const [a] = (await handle.describe()).raw.pendingActivities ?? [];
        return a?.state === STARTED && a.lastWorkerIdentity === identity && a.heartbeatDetails ? true : undefined;
      }, 'the call started and heartbeated');

      const reclaimed = await reclaimFromDeadWorkers(client, taskQueue, 'reclaim-test-worker');

      expect(reclaimed).toEqual({ workflows: 1, activities: 1 });
      expect(await handle.result()).toEqual(progress);
      expect(attempts).toEqual([1, 2]);
    });
  } finally {
    await connection.close();
  }
});

it('leaves live workers and other hosts alone', async () => {
  expect(localPid(`${process.pid}@${hostname()}`)).toBe(process.pid);
  expect(localPid(`${process.pid}@another-host`)).toBeUndefined();
  expect(localPid('rollflow-worker')).toBeUndefined();
  expect(await reclaimFromDeadWorkers(client, 'no-such-queue', 'x')).toEqual({ workflows: 0, activities: 0 });
});
