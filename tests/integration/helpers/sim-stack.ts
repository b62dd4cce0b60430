/**
 * A whole rollflow stack for one test file, started the way a user starts it
 * (`rollflow dev up`): a real dev server, sim engines on free ports, a worker.
 * The test file gives the run config's own keys; the stack adds where
 * Temporal and the engines are.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { expect } from 'vitest';
import { freePort, TestDevServer } from './dev-server';

export interface SimStack {
  server: TestDevServer;
  /** The run config file, for `rollflow run <config>`. */
  config: string;
  client: Client;
  rollflow(...args: string[]): ReturnType<TestDevServer['rollflow']>;
  down(): Promise<void>;
}

/**
 * `keys`: YAML lines of the run config; `run_dir` is <server state dir>/run; `inferenceOptions`: the sim inference
 * server's options; `temporalKeys`: more keys of the temporal section, e.g. `codec_url: "http://127.0.0.1:9000"`.
 */
export async function upSimStack(taskQueue: string, keys: string, inferenceOptions: Record<string, unknown> = {}, temporalKeys = ''): Promise<SimStack> {
  const server = await TestDevServer.create();
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  const config = path.join(server.stateDir, 'run.yaml');
  writeFileSync(
    config,
    `${keys}
run_dir: ${server.stateDir}/run
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: ${taskQueue}${temporalKeys ? `, ${temporalKeys}` : ''} }
engines:
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: ${JSON.stringify(inferenceOptions)} }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim }
  env: { url: "http://127.0.0.1:${env}" }
`,
  );
  const rollflow = (...args: string[]) => server.rollflow(args, 600_000);
  const up = rollflow('dev', 'up', config);
  expect(up.status, up.stderr).toBe(0);
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  return {
    server,
    config,
    client,
    rollflow,
    async down() {
      await client.connection.close();
      rollflow('dev', 'down', config);
    },
  };
}
