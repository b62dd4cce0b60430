// A retried env step is never applied twice, against a real env server process (python-engines --role env with an
// action_log): a swe_lite step whose command outlives the client's timeout is retried by the adapter with the same
// state, as Temporal retries an envStep activity whose attempt timed out (or whose worker died: its connection
// closes the same way). The retry arrives while the first attempt still runs on the server, waits for it, and gets
// its answer. Checked on three independent records: the episode's own workspace (the command appended one line),
// the server's action log (one line for the index) and its replay counter.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pythonEnv } from '../../src/envs';
import { EngineUnavailableError, EnvClient } from '../../src/gpu-bridge';
import { readJsonl } from './helpers/dev-server';
import { TestEngine } from './helpers/engine';
import { scrape } from './helpers/prometheus';

let engine: TestEngine;
let dir: string;
let actionLog: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'rollflow-env-once-'));
  actionLog = path.join(dir, 'actions.jsonl');
  const option = (k: string, v: string) => ['--option', `${k}=${v}`];
  engine = await TestEngine.start('env', [...option('action_log', actionLog), ...option('sandbox_root', path.join(dir, 'sandboxes')), ...option('snapshot_dir', path.join(dir, 'snapshots'))]);
});
afterAll(() => {
  engine?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// The command runs for 5 s; the first attempt gives up after 1.5 s, long after the request reached the server.
const SLOW_APPEND = '<bash>sleep 5; echo ran >> runs.log</bash>';

it('a step retried after the client timed out is answered from the record: the command ran once, the log has one line', async () => {
  const client = new EnvClient(engine.url);
  const env = pythonEnv(client, 'swe_lite');
  const config = env.parseConfig({ task: 't1-000' });
  const { state } = await env.reset(config, 0);
  expect(state.stepTimeoutS).toBe(20 + 120 + 10 + 10); // swe_lite's default command + grading limits and its overheads

  const lost = await client.step({ session: state.session, index: 0, action: SLOW_APPEND }, { timeoutMs: 1_500 }).catch((e: unknown) => e);
  expect(lost).toBeInstanceOf(EngineUnavailableError);
  expect((lost as Error).message).toContain('no whole answer within 1500 ms');

  const retried = await env.step(config, state, SLOW_APPEND); // the activity's retry: same state, so index 0 again
  expect(retried.observation).toBe('[exit 0]\n');
  const next = await env.step(config, retried.state, '<bash>cat runs.log</bash>');
  expect(next.observation).toBe('[exit 0]\nran\n'); // applied twice, it would read ran twice

  const lines = readJsonl<{ session: string; index: number }>(actionLog).filter((l) => l.session === state.session);
  expect(lines.map((l) => l.index)).toEqual([0, 1]);
  expect((await scrape(engine.url)).get('rollflow_env_steps_replayed_total')).toBe(1);
  await client.close({ session: state.session }); // removes the workspace (its tmpfs) before the server is killed
});
