// A SWE-lite env server killed mid-episode inside a run (issue #13's durable env state), on a real dev server
// with the scripted sim policy; the scenario and its checks are helpers/snapshot-env-loss.ts's, shared with the
// swe env's test (swe-env-loss.test.ts).
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, ROOT, TestDevServer } from './helpers/dev-server';
import { loseSnapshotEnvMidEpisode } from './helpers/snapshot-env-loss';

const B = 8;
// Four steps: room for the helper's holds (a suspend and a resume each) to find an episode to lose before the last;
// with two, a first hold that found none (every episode ended) could not try again before the run completed.
const STEPS = 4;
let server: TestDevServer;
let config: string;
let client: Client;
let envUrl: string;
let envPort: number;

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const [inference, trainer] = [await freePort(), await freePort()];
  envPort = await freePort();
  envUrl = `http://127.0.0.1:${envPort}`;
  const snapshotDir = path.join(server.stateDir, 'env-snapshots');
  ({ config, client } = await server.upStack(
    `
exp_name: swe-lite-env-loss-test
run_dir: ${server.stateDir}/run
seed: 5
async_generation_ratio: 1
stale_policy: drop
dataset_size: 40
custom_envs:
  swe:
    env_type: swe_lite
    max_steps: 10
    max_tokens_per_step: 512
    env_calls: activity
    env_config: { max_turns: 10, tiers: [1] }
train_env_manager: { num_env_groups: 2, group_size: 4, tags: [swe] }
actor_infer: { generating_args: { max_new_tokens: 512 } }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: swe-lite-env-loss-test }
engines:
  # Solvers view, run two commands (each saves a snapshot), fix and submit; flailers run commands for 6 turns.
  # A real per-call cost, so episodes spend their time between env steps.
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: { sim: { c0: 0.2, policy: { kind: swe_oracle, solve_prob: 0.5, solve_after_turns: 3, flail_turns: 6, invalid_prob: 0 } } } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim, options: { sim_seconds_per_sample: 0.02 } }
  env: { url: "${envUrl}", options: { snapshot_dir: "${snapshotDir}" } }
`,
    { supervise: false },
  ));
});

afterAll(() => server?.downStack(config, client));

it('a killed env server: the lost episodes resume from their snapshots on the new server; every episode graded, each step trained once', { timeout: 600_000 }, () =>
  loseSnapshotEnvMidEpisode({ server, config, client, env: 'swe_lite', envUrl, envPort, runId: 'swe-env-loss', batch: B, steps: STEPS }));
