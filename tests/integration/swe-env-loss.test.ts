// The swe env (SWE-bench-format tasks on a real pytest project) killed mid-episode inside a run, as
// swe-lite-env-loss.test.ts does for SWE-lite (issue #25 item 6: the env-loss guarantee on real repositories), with
// the same scenario and checks (helpers/snapshot-env-loss.ts). The dataset is the tally project of
// python-engines/tests/envs/swe/project.py, built by its own code (three instances, a prepared environment, one
// repository a tarball). The scripted oracle applies gold patches through tool calls after a wasted command; the
// suspension cuts some of its replies, which continue from their partial tokens after the resume.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, ROOT, TestDevServer } from './helpers/dev-server';
import { loseSnapshotEnvMidEpisode } from './helpers/snapshot-env-loss';

const B = 8;
// Three steps: room for the helper's holds (a suspend and a resume each) to find an episode to lose before the last.
const STEPS = 3;
let server: TestDevServer;
let config: string;
let client: Client;
let envUrl: string;
let envPort: number;

/** The tally dataset, built by the Python tests' own builder: its instances file and the env's source config. */
function buildTally(root: string): { instances: string; source: Record<string, string> } {
  mkdirSync(root, { recursive: true });
  const script = 'import json, sys; from pathlib import Path; from tests.envs.swe.project import build, source; b = build(Path(sys.argv[1])); print(json.dumps({"instances": str(b.instances_path), "source": source(b)}))';
  const done = spawnSync(path.join(ROOT, '.venv', 'bin', 'python'), ['-c', script, root], { cwd: path.join(ROOT, 'python-engines'), encoding: 'utf8', timeout: 600_000 });
  expect(done.status, done.stderr).toBe(0);
  return JSON.parse(done.stdout.trim().split('\n').pop()!) as { instances: string; source: Record<string, string> };
}

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const [inference, trainer] = [await freePort(), await freePort()];
  envPort = await freePort();
  envUrl = `http://127.0.0.1:${envPort}`;
  const snapshotDir = path.join(server.stateDir, 'env-snapshots');
  const tally = buildTally(path.join(server.stateDir, 'tally'));
  ({ config, client } = await server.upStack(
    `
exp_name: swe-env-loss-test
run_dir: ${server.stateDir}/run
seed: 5
async_generation_ratio: 1
stale_policy: drop
dataset_size: 3
custom_envs:
  swe:
    env_type: swe
    max_steps: 8
    max_tokens_per_step: 4096
    env_calls: activity
    env_config: { max_turns: 8, actions: tool_calls, instances: "${tally.instances}", source: ${JSON.stringify(tally.source)} }
train_env_manager: { num_env_groups: 2, group_size: 4, tags: [swe] }
actor_infer: { generating_args: { max_new_tokens: 4096 } }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: swe-env-loss-test }
engines:
  # Solvers waste a command (a snapshot each), then apply the gold patch and submit; flailers act for 6 turns.
  # 10 ms a decode step (the sim writes a token a byte: a reply of a patch is hundreds of them), so episodes
  # spend their time between env steps.
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: { sim: { c0: 0.01, policy: { kind: swe_oracle, instances: "${tally.instances}", solve_prob: 0.5, flail_turns: 6, invalid_prob: 0, wasted_command_prob: 1 } } } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim, options: { sim_seconds_per_sample: 0.02 } }
  env: { url: "${envUrl}", options: { snapshot_dir: "${snapshotDir}" } }
`,
    { supervise: false },
  ));
});

afterAll(() => server?.downStack(config, client));

it('a killed env server: the lost episodes resume from their snapshots on the new server; every episode graded, each step trained once', { timeout: 600_000 }, () =>
  loseSnapshotEnvMidEpisode({ server, config, client, env: 'swe', envUrl, envPort, runId: 'swe-real-env-loss', batch: B, steps: STEPS }));
