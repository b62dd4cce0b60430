// An inference server killed with SIGKILL mid-run, then restarted with its
// launch weights, then the other one killed, on a real dev server with sim
// engines and two inference servers, started by the CLI. The run must finish
// with every step trained once and no sample lost (generations on a dead
// server continue on the other from their partial tokens; weight syncs skip
// it), and the restarted server must never serve the run a version older
// than it asked for (it is caught up first). Every check reads what the run recorded: batch files the
// trainer read, metrics.jsonl, the servers' own /state and /metrics.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { batchDir, runDataDir } from '../../src/core';
import { status as statusQuery } from '../../src/workflows/run';
import { freePort, readJsonl, readPid, ROOT, TestDevServer, until } from './helpers/dev-server';

const B = 8; // 2 groups of 4
const STEPS = 16;
const ALPHA = 1;
let server: TestDevServer;
let config: string;
let client: Client;
let urls: string[];
let ports: number[];

const rollflow = (...args: string[]) => server.rollflow(args, 600_000);

const engineState = async (url: string) => (await fetch(`${url}/state`)).json() as Promise<{ version: number; running: number; waiting: number }>;

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  ports = [await freePort(), await freePort()];
  urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const [trainer, env] = [await freePort(), await freePort()];
  config = path.join(server.stateDir, 'run.yaml');
  // A real decode cost and long-tailed lengths: generations are under way whenever the server is killed.
  const inference = (url: string) => `{ url: "${url}", backend: sim, options: { sim: { c0: 0.02, c1: 0.0005, length: { dist: lognormal, mean: 32, sigma: 0.8 } } } }`;
  writeFileSync(
    config,
    `
exp_name: failover-test
run_dir: ${server.stateDir}/run
max_steps: ${STEPS}
rollout_batch_size: 2
num_return_sequences_in_group: 4
async_generation_ratio: ${ALPHA}
dataset_size: 64
custom_envs:
  arith: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 64 }
train_env_manager: { num_env_groups: 2, group_size: 4, tags: [arith] }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: failover-test }
engines:
  inference: [${urls.map(inference).join(', ')}]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim, options: { sim_seconds_per_sample: 0.02 } }
  env: { url: "http://127.0.0.1:${env}" }
`,
  );
  const up = rollflow('dev', 'up', config, '--no-supervise');
  expect(up.status, up.stderr).toBe(0);
  client = new Client({ connection: await Connection.connect({ address: server.address }) });
});

afterAll(async () => {
  await client?.connection.close();
  if (server) rollflow('dev', 'down', config);
});

it('an inference server killed mid-generation, restarted, then the other killed: every step trained once, no sample lost, never an older version served', async () => {
  const runId = 'failover';
  // accept: a stale sample is trained on, not dropped, so a token served on old weights would reach a batch.
  const started = rollflow('run', config, '--run-id', runId, '--set', 'stale_policy=accept');
  expect(started.status, started.stderr).toBe(0);
  const handle = client.workflow.getHandle(runId);
  const [victimUrl, survivorUrl] = urls as [string, string];

  // Kill server 0 with SIGKILL while it is generating, after the run has trained a step.
  await until(async () => ((await handle.query(statusQuery)).step >= 1 && (await engineState(victimUrl)).running > 0 ? true : undefined));
  await server.killEngine('inference', victimUrl);
  const killedAt = (await handle.query(statusQuery)).step;

  // The run goes on with one server: weight syncs do not wait for the dead one. (The survivor's version is waited for,
  // not read once: a sync skips a server the worker's prober holds for down, as a busy one on a loaded machine may be,
  // and the prober brings it to the latest weights once it answers. A full run once read it one version behind.)
  await until(async () => ((await handle.query(statusQuery)).step >= killedAt + 2 ? true : undefined));
  await until(async () => ((await engineState(survivorUrl)).version >= killedAt + 2 ? true : undefined), 'the survivor serves the weights of two steps after the kill');

  // Restart it: it comes back with its launch weights (version 0), behind the run. Once the worker's prober has
  // marked it up, kill the other server: from then on every generation (new, continued after the failover,
  // or after a sync's abort) runs on the restarted one, so weights it served too old would reach the batches.
  const up = rollflow('dev', 'up', config, '--no-supervise');
  expect(up.status, up.stderr).toBe(0);
  expect(up.stdout).toMatch(new RegExp(`engine-inference-${ports[0]}: started`));
  const workerLog = path.join(server.stateDir, 'logs', 'worker-failover-test.log');
  await until(async () => (readFileSync(workerLog, 'utf8').includes(`"url":"${victimUrl}","msg":"inference server back up`) ? true : undefined));
  const restartedAt = (await handle.query(statusQuery)).step;
  expect(restartedAt).toBeLessThan(STEPS - 2); // steps remain for it to serve
  process.kill(readPid(path.join(server.stateDir, 'pids', `engine-inference-${ports[1]}.pid`)), 'SIGKILL');

  const final = await handle.result();
  expect(final.step).toBe(STEPS);

  // Every step trained once, on a full batch of distinct samples.
  const metrics = readJsonl<{ run_id: string; step: number }>(path.join(runDataDir(path.join(server.stateDir, 'run'), runId), 'metrics.jsonl')).filter((m) => m.run_id === runId);
  expect(metrics.map((m) => m.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i));
  const dir = path.join(server.stateDir, 'run', 'samples', batchDir(runId));
  const batches = readdirSync(dir)
    .sort()
    .map((f) => readJsonl<{ uid: string; response_ids: number[]; old_logprobs: number[]; version_spans: { version: number; start: number; end: number }[] }>(path.join(dir, f)));
  expect(batches).toHaveLength(STEPS);
  const uids = batches.flat().map((s) => s.uid);
  expect(uids).toHaveLength(STEPS * B);
  expect(new Set(uids).size).toBe(STEPS * B);

  // Spans cover every token once and never go back to an older version. The restarted server's launch
  // weights (version 0) never reach a batch trained after the restart: it was caught up before it served.
  // (Version 0 is the run's first, so only groups started before step 1 may hold it, long consumed by then.)
  batches.forEach((batch, step) => {
    for (const s of batch) {
      expect(s.old_logprobs).toHaveLength(s.response_ids.length);
      expect(s.version_spans.at(-1)!.end).toBe(s.response_ids.length);
      s.version_spans.forEach((span, i) => {
        expect(span.start).toBe(i === 0 ? 0 : s.version_spans[i - 1]!.end);
        if (i > 0) expect(span.version).toBeGreaterThanOrEqual(s.version_spans[i - 1]!.version);
        if (step >= restartedAt) expect(span.version, `batch ${step}, ${s.uid}`).toBeGreaterThan(0);
      });
    }
  });

  expect((await engineState(victimUrl)).version).toBe(STEPS);
});
