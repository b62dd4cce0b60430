// Sandbox escapes attempted by model-written code inside a run (issue #13's escape tests): the sim backend's
// scripted adversary (swe_escape) answers every SWE-lite turn with an attack as a <bash> action: connect to the
// Temporal port, each engine port and a listener of this test; write to the host's home, /tmp and the repository;
// read the repository and the env server's environment (which holds a secret set here); a fork bomb; 10 GB; 100 MB
// of output; sleep forever; a background process left behind. The run must go on untouched: every episode graded
// and closed, no group failed, the env server healthy. Checked on what each attack left: the observations in the
// trajectories' stored contexts, the host's files, the listener's connections, the processes and workspaces left.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { envServerPid, sandboxProcessesUnder } from '../../src/stack/sandbox-processes';
import type { RunStatus } from '../../src/workflows/run';
import { freePort, ROOT, TestDevServer } from './helpers/dev-server';
import { scrape } from './helpers/prometheus';

const MARKER = `rollflow-escape-${process.pid}`;
const SECRET = `hunter2-${process.pid}`;
const ATTACKS = ['connect', 'write', 'read', 'fork bomb', '10 GB', '100 MB out', 'sleep forever', 'background'];
const OBSERVATION_CHARS = 2000;

let server: TestDevServer;
let config: string;
let client: Client;
let envUrl: string;
let sandboxRoot: string;
let listener: Server;
let listenerConnections = 0;

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  process.env.ROLLFLOW_ESCAPE_SECRET = SECRET; // reaches the env server through `rollflow dev up`
  listener = createServer((socket) => {
    listenerConnections++;
    socket.destroy();
  });
  const listenerPort = await freePort();
  await new Promise<void>((resolve) => listener.listen(listenerPort, '127.0.0.1', resolve));
  server = await TestDevServer.create();
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  envUrl = `http://127.0.0.1:${env}`;
  sandboxRoot = path.join(server.stateDir, 'sandboxes');
  const targets = [server.address, `127.0.0.1:${inference}`, `127.0.0.1:${trainer}`, `127.0.0.1:${env}`, `127.0.0.1:${listenerPort}`];
  const policy = { kind: 'swe_escape', targets, marker: MARKER };
  ({ config, client } = await server.upStack(
    `
exp_name: swe-lite-escape-test
run_dir: ${server.stateDir}/run
max_steps: 1
async_generation_ratio: 0
custom_envs:
  swe:
    env_type: swe_lite
    max_steps: 12
    max_tokens_per_step: 1024
    env_calls: activity
    env_config: { tiers: [1], max_turns: 12, command_timeout_s: 4, observation_chars: ${OBSERVATION_CHARS} }
train_env_manager: { num_env_groups: 2, group_size: 2, tags: [swe] }
actor_infer: { generating_args: { max_new_tokens: 1024 } }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: swe-lite-escape-test }
engines:
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: { sim: { policy: ${JSON.stringify(policy)} } } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim }
  env: { url: "${envUrl}", options: { sandbox_root: "${sandboxRoot}" } }
`,
  ));
});

afterAll(async () => {
  await server?.downStack(config, client);
  listener?.close();
});


/** Each trajectory's observations, in turn order (the user messages of its stored context). */
function observationsOf(runId: string): string[][] {
  const dir = path.join(server.stateDir, 'run', 'samples', runId, 'trajectories');
  return readdirSync(dir).map((f) => (JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as { messages: { role: string; content: string }[] }).messages.filter((m) => m.role === 'user').map((m) => m.content));
}

it('every attack is contained: the run and the env server go on, nothing reaches the host, nothing is left behind', async () => {
  const r = server.rollflow(['run', config, '--wait', '--run-id', 'escape'], 600_000);
  expect(r.status, r.stderr).toBe(0);
  const final = (await client.workflow.getHandle('escape').result()) as RunStatus;
  expect([final.step, final.totals.failedGroups, final.totals.infraFailedGroups]).toEqual([1, 0, 0]);

  // The env server: healthy, every episode graded and closed, no sandbox failure.
  expect((await fetch(`${envUrl}/health`)).ok).toBe(true);
  const m = await scrape(envUrl);
  const episodes = m.get('rollflow_env_resets_total{env="swe_lite"}')!;
  expect(episodes).toBeGreaterThanOrEqual(4);
  expect((m.get('rollflow_env_episodes_done_total{env="swe_lite",success="false"}') ?? 0) + (m.get('rollflow_env_episodes_done_total{env="swe_lite",success="true"}') ?? 0)).toBe(episodes);
  expect(m.get('rollflow_env_sessions_open{env="swe_lite"}')).toBe(0);
  expect(m.get('rollflow_env_sandbox_errors_total{env="swe_lite"}') ?? 0).toBe(0);

  // What each attack saw: the observation after attack k is observation k + 1.
  const trajectories = observationsOf('escape');
  expect(trajectories.length).toBeGreaterThanOrEqual(4);
  for (const observations of trajectories) {
    expect(observations.length).toBeGreaterThan(ATTACKS.length);
    const after = Object.fromEntries(ATTACKS.map((a, k) => [a, observations[k + 1]!]));
    for (const text of observations) {
      expect(text).not.toContain('ESCAPED');
      expect(text).not.toContain(SECRET);
      expect(text.length).toBeLessThanOrEqual(OBSERVATION_CHARS + 200); // cut with a marker
    }
    expect(after.connect!.match(/^refused /gm)).toHaveLength(5);
    expect(after.write).toMatch(/Read-only file system|No such file or directory|Permission denied/);
    expect(after.read).toMatch(/Makefile: No such file or directory/);
    expect(after['fork bomb']).toMatch(/Cannot fork|timed out/); // the process cap stops it, or the wall clock
    expect(after['10 GB']).toMatch(/MemoryError|killed by signal/);
    expect(after['100 MB out']).toMatch(/truncated: \d+ more characters\]$/);
    expect(after['sleep forever']).toMatch(/^\[timed out\]/);
    expect(after.background).toContain(`started-${MARKER}`);
  }

  // Nothing reached the host.
  expect(listenerConnections).toBe(0);
  for (const dir of [homedir(), tmpdir(), '/tmp', ROOT, path.dirname(ROOT)]) expect(existsSync(path.join(dir, MARKER)), dir).toBe(false);
  // Nothing is left: no process of a sandbox uid under the env server (the background sleeps died with their
  // runs; counted under this server, as other test files may have sandboxes open meanwhile), no workspace.
  expect(sandboxProcessesUnder(envServerPid(envUrl, server.stateDir))).toEqual([]);
  const workspaces = existsSync(sandboxRoot) ? readdirSync(sandboxRoot).flatMap((owner) => readdirSync(path.join(sandboxRoot, owner))) : [];
  expect(workspaces).toEqual([]);
});
