// File datasets and run data end to end, on a real dev server with sim
// engines, started by the CLI: a 10 MB row is reported and skipped and the
// run completes (it used to be retried without end at step 0); a row that
// passes the index but whose observation is above the payload guard fails its
// groups with PayloadTooLargeError and the run stops saying so; a missing
// file fails the run at its start; each run keeps its own directory and a
// run id that already has data is refused. Checks read what the runs
// recorded, never elapsed time.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDataDir } from '../../src/workflows/ids';
import type { RunStatus } from '../../src/workflows/run';
import { freePort, readJsonl, ROOT, TestDevServer } from './helpers/dev-server';

let server: TestDevServer;
let config: string;
let client: Client;

const rollflow = (...args: string[]) => server.rollflow(args, 600_000);
const row = (prompt: string, answer: string) => JSON.stringify({ prompt, answer });
const runFiles = (runId: string) => runDataDir(path.join(server.stateDir, 'run'), runId);

/** `rollflow run --wait` on a dataset file, one group of 2 per step, synchronous. */
function runOn(runId: string, file: string, ...sets: string[]) {
  return rollflow('run', config, '--wait', '--run-id', runId, '--set', `custom_envs.ds.env_config.path=${file}`, ...sets.flatMap((s) => ['--set', s]));
}

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  config = path.join(server.stateDir, 'run.yaml');
  writeFileSync(
    config,
    `
exp_name: dataset-test
run_dir: ${server.stateDir}/run
max_steps: 2
rollout_batch_size: 1
num_return_sequences_in_group: 2
async_generation_ratio: 0
custom_envs:
  ds: { env_type: dataset, max_steps: 1, max_tokens_per_step: 8, env_config: { path: /unset, verifier: exact_match } }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: dataset-test }
engines:
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim }
  env: { url: "http://127.0.0.1:${env}" }
`,
  );
  const up = rollflow('dev', 'up', config);
  expect(up.status, up.stderr).toBe(0);
  client = new Client({ connection: await Connection.connect({ address: server.address }) });
});

afterAll(async () => {
  await client?.connection.close();
  if (server) rollflow('dev', 'down', config);
});

describe('dataset runs', () => {
  it('a 10 MB row is reported and skipped; the run completes on the other rows', async () => {
    const huge = row('9'.repeat(10 * 1024 * 1024), '9');
    const file = path.join(server.stateDir, 'huge.jsonl');
    writeFileSync(file, [row('1+1=', '2'), huge, row('2+2=', '4'), ''].join('\n'));
    const r = runOn('huge', file);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`dataset: 2 rows, 1 malformed rows skipped (1 too_large; line 2: ${Buffer.byteLength(huge)} bytes, above max_row_bytes ${256 * 1024})`);
    const final = (await client.workflow.getHandle('huge').result()) as RunStatus;
    expect([final.datasetSize, final.step, final.totals.failedGroups]).toEqual([2, 2, 0]);
    expect(readJsonl<{ step: number }>(path.join(runFiles('huge'), 'metrics.jsonl')).map((m) => m.step)).toEqual([0, 1]);
  });

  it('a row the index keeps but whose observation is above max_result_bytes fails its groups with PayloadTooLargeError, and the run stops saying so', async () => {
    const file = path.join(server.stateDir, 'big-rows.jsonl');
    writeFileSync(file, Array.from({ length: 4 }, (_, i) => row(`${i}`.repeat(1536 * 1024), `${i}`)).join('\n'));
    const r = runOn('too-big', file, 'custom_envs.ds.env_config.max_row_bytes=4194304');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/run too-big failed: .*groups failed; last error: .*envReset: the result is \d+ bytes \(its observation is 1572866 bytes\), above temporal\.worker\.max_result_bytes 1048576/);
    const failed = await client.workflow.getHandle('too-big').describe();
    expect(failed.status.name).toBe('FAILED');
  });

  it('a dataset file that does not exist fails the run at its start, naming config.path', () => {
    const missing = path.join(server.stateDir, 'missing.jsonl');
    const r = runOn('missing', missing);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`config.path: got ${JSON.stringify(missing)}; a readable JSON-lines file (it does not exist)`);
    expect(existsSync(path.join(runFiles('missing'), 'metrics.jsonl'))).toBe(false);
  });

  it('two runs of one config keep their own data; a run id that already has data is refused before it starts', async () => {
    const file = path.join(server.stateDir, 'small.jsonl');
    writeFileSync(file, [row('1+1=', '2'), row('2+2=', '4')].join('\n'));
    expect(runOn('first', file).status).toBe(0);
    expect(runOn('second', file, 'max_steps=3').status).toBe(0);
    for (const [runId, steps] of [['first', [0, 1]], ['second', [0, 1, 2]]] as const) {
      const records = readJsonl<{ run_id: string; step: number }>(path.join(runFiles(runId), 'metrics.jsonl'));
      expect(records.map((m) => [m.run_id, m.step])).toEqual(steps.map((s) => [runId, s]));
      expect(readdirSync(path.join(runFiles(runId), 'checkpoints'))).toEqual([`step-00000${steps.length}`]);
    }
    const again = runOn('first', file);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain(`--run-id: got "first"; an id with no data yet: ${runFiles('first')} holds an earlier run's data`);
    // refused before starting: the first run's workflow is still the only execution under its id
    const executions = [];
    for await (const e of client.workflow.list({ query: `WorkflowId = 'first'` })) executions.push(e.runId);
    expect(executions).toHaveLength(1);
  });
});
