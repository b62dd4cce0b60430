// A workflow waiting for a signal survives a dev-server stop and restart on the
// same db file, then completes when signalled. Nothing here is mocked.
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, expect, it } from 'vitest';
import { TestDevServer } from './helpers/dev-server';
import { release, state, waitForRelease } from './workflows';

const taskQueue = 'durability-test';
let server: TestDevServer;

afterAll(() => server?.stop());

async function withWorkerAndClient<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  const worker = await Worker.create({ connection: nativeConnection, taskQueue, workflowsPath: path.join(__dirname, 'workflows/index.ts') });
  const connection = await Connection.connect({ address: server.address });
  try {
    return await worker.runUntil(fn(new Client({ connection })));
  } finally {
    await connection.close();
    await nativeConnection.close();
  }
}

it('keeps a waiting workflow across a server restart on the same db', async () => {
  server = await TestDevServer.create();
  server.start();

  const workflowId = `wait-${Date.now()}`;
  await withWorkerAndClient(async (client) => {
    const handle = await client.workflow.start(waitForRelease, { taskQueue, workflowId });
    expect(await handle.query(state)).toBe('waiting');
  });

  expect(server.stop().stderr).toContain('stopped');
  expect(server.run('status').status).toBe(3);
  expect(server.start().stderr).toContain('started');

  const result = await withWorkerAndClient(async (client) => {
    const handle = client.workflow.getHandle(workflowId);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(await handle.query(state)).toBe('waiting');
    await handle.signal(release, 'after-restart');
    return handle.result();
  });
  expect(result).toBe('released with after-restart');
});
