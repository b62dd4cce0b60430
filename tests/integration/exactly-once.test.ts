// Exactly-once, shown as bits (docs/exactly-once.md): a synchronous (α = 0), seeded run on the torch
// engines, once fault-free and once with each of the five kinds of process (inference server, env server,
// worker, Temporal, trainer) killed with SIGKILL mid-run and brought back by the stack's supervisor alone,
// ends with every weights export v1…vN bit-identical (weightsHash of the safetensors files), every batch
// file identical (the same tokens, logprobs and rewards) and the env server's action log holding the same
// actions, each applied once.
// The trainer is saved only at the start, so its recovery replays every step trained before the kill.
// Faults are triggered by the run's recorded step, not by a clock. The long version, a fault every 20–40 s
// over every kind and three seeds, is bench/exactly-once (make bench).
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareBits, readRunBits } from '../../src/chaos/exactly-once';
import { FAULTS, type ProcessKind } from '../../src/chaos/faults';
import { connectClient } from '../../src/client/connect';
import { loadConfig, type LoadedConfig } from '../../src/configs';
import { REPLAYED_STEPS, runDataDir, TRAINER_PREFIX } from '../../src/core';
import { startRun } from '../../src/launch/run';
import { down, up } from '../../src/stack';
import { launchedEngines, stateDirOptions } from '../../src/stack/engines';
import { isAlive, livePid } from '../../src/stack/processes';
import { status as statusQuery } from '../../src/workflows/run';
import { freePort, readJsonl, ROOT, TestDevServer, until } from './helpers/dev-server';

const STEPS = 8;
let server: TestDevServer;
let file: string;
let loaded: LoadedConfig;
let client: Client;
const log: string[] = [];
const say = (l: string) => log.push(l);

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  process.env.ROLLFLOW_STATE = server.stateDir; // the stack's pid files, logs and weights exports (this test file's process only)
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  file = path.join(server.stateDir, 'exactly-once.yaml');
  writeFileSync(
    file,
    `
exp_name: exactly-once
seed: 3
run_dir: ${server.stateDir}/run
max_steps: ${STEPS}
rollout_batch_size: 2
num_return_sequences_in_group: 4
async_generation_ratio: 0
dataset_size: 64
trainer_state_save_steps: 0
entropy_loss_coef: 0.01  # a gradient even when every group's rewards tie
custom_envs:
  add: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 6, env_config: { max_operand: 9, ops: ["+"], prompt: compact } }
actor_train:
  model_args: { model_name_or_path: "tiny:default" }
  training_args: { learning_rate: 1.0e-3, per_device_train_batch_size: 8 }
actor_infer:
  generating_args: { max_new_tokens: 6, temperature: 1.0 }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: exactly-once }
engines:
  inference: [{ url: "http://127.0.0.1:${inference}", backend: torch, options: { max_batch: 16, torch_threads: 1, batch_invariant: true } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: torch, options: { torch_threads: 1 } }
  env: { url: "http://127.0.0.1:${env}" }
`,
  );
  loaded = loadConfig(file);
  await up(loaded, [file], say);
  client = await connectClient(loaded.config);
});

afterAll(async () => {
  await client?.connection.close();
  if (loaded) await down(loaded, say);
});

/** SIGKILL the stack's process of `kind` and wait until it is gone. */
async function kill(kind: ProcessKind): Promise<void> {
  const p = FAULTS[kind](loaded)[0]!;
  const pid = livePid(p);
  expect(pid, `${kind} is running`).toBeDefined();
  process.kill(pid!, 'SIGKILL');
  await until(async () => (isAlive(pid!) ? undefined : true), `${p.name} gone`);
  say(`killed ${p.name} (pid ${pid})`);
}

/** The env server's action log (dev up gives it one under the state dir): each applied step's index, action hash, reward. */
const envActions = () => {
  const env = launchedEngines(loaded).find((e) => e.role === 'env')!;
  return readJsonl<{ session: string; index: number; action_sha256: string; reward: number; done: boolean }>(stateDirOptions(env).action_log as string);
};
const applied = (lines: ReturnType<typeof envActions>) => lines.map((l) => `${l.index} ${l.action_sha256} ${l.reward} ${l.done}`).sort();

const stepReached = (runId: string, step: number) => until(async () => ((await client.workflow.getHandle(runId).query(statusQuery)).step >= step ? true : undefined));

async function run(runId: string, faults: [afterStep: number, kind: ProcessKind][]): Promise<{ step: number; version: number }> {
  await startRun(loaded, [file], { runId }, say, say);
  for (const [afterStep, kind] of faults) {
    await stepReached(runId, afterStep);
    await kill(kind); // nothing restarts it here: the supervisor does
  }
  return (await client.workflow.getHandle(runId).result()) as { step: number; version: number };
}

describe('exactly-once at α = 0 on the torch engines', () => {
  it('a run with a process of each kind killed mid-run ends bit-identical to the fault-free run', { timeout: 900_000 }, async () => {
    expect(await run('clean', []), log.join('\n')).toMatchObject({ step: STEPS, version: STEPS });
    const clean = readRunBits(loaded, 'clean', STEPS);
    const cleanActions = envActions();

    // Temporal last: after its restart this test's client takes a while to reconnect, and a kill that waits on its
    // query can land after the run's last step (a trainer killed then replays nothing, which failed this test once).
    const faults: [number, ProcessKind][] = [[2, 'inference'], [3, 'env'], [4, 'worker'], [5, 'trainer'], [6, 'temporal']];
    expect(await run('faulted', faults), log.join('\n')).toMatchObject({ step: STEPS, version: STEPS });
    const faulted = readRunBits(loaded, 'faulted', STEPS);
    const faultedActions = envActions().slice(cleanActions.length);

    // The same actions applied, each once: no (session, index) twice, and the same multiset of (index, action, reward).
    expect(faultedActions.length).toBeGreaterThan(0);
    expect(new Set(faultedActions.map((l) => `${l.session} ${l.index}`)).size).toBe(faultedActions.length);
    expect(applied(faultedActions)).toEqual(applied(cleanActions));

    // The trainer's kill was recovered by replaying the stored batches since its only saved state (version 0).
    const metrics = readJsonl<Record<string, number>>(path.join(runDataDir(loaded.derived.run_dir, 'faulted'), 'metrics.jsonl'));
    const replayed = metrics.map((m) => m[`${TRAINER_PREFIX}${REPLAYED_STEPS}`]).filter((n) => n !== undefined);
    expect(replayed).toHaveLength(1);
    expect(replayed[0]).toBeGreaterThanOrEqual(5);

    expect(clean.batches).toHaveLength(STEPS);
    expect(compareBits(clean, faulted)).toEqual({ weightsEqual: true, batchesEqual: true });
    expect(new Set(clean.versionHashes).size).toBe(STEPS); // every step changed the weights
    say(`v${STEPS} sha256 ${faulted.versionHashes.at(-1)}`);
  });
});
