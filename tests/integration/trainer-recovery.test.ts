// Trainer recovery without an operator, on a real dev server with sim engines started by the CLI: a trainer
// killed with SIGKILL mid-run comes back (as an operator's `rollflow dev up` restarts it) at its launch
// weights and holds no run; the run restores the newest saved trainer state and replays the stored batches
// since it, and completes with every step trained once on one lineage; when that newest state is corrupt, the
// previous one. Two runs cannot share one trainer.
// Every check reads what the runs recorded (metrics.jsonl, batch files, workflow results), never elapsed time.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure, type Client, WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchDir, REPLAYED_STEPS, runDataDir, TRAINER_PREFIX, trainerStateDir } from '../../src/core';
import { cancelRun, status as statusQuery } from '../../src/workflows/run';
import { innermostCause } from '../../src/workflows/failure';
import { freePort, readJsonl, readPid, ROOT, TestDevServer, until } from './helpers/dev-server';

const B = 8; // 2 groups of 4
const REPLAYED = `${TRAINER_PREFIX}${REPLAYED_STEPS}`;
const UNREACHED_STEPS = 1000;
let server: TestDevServer;
let config: string;
let client: Client;
let trainerPort: number;

const rollflow = (...args: string[]) => server.rollflow(args, 600_000);
const runDir = () => path.join(server.stateDir, 'run');

function start(runId: string, ...sets: string[]): void {
  const r = rollflow('run', config, '--run-id', runId, ...sets.flatMap((s) => ['--set', s]));
  expect(r.status, r.stderr).toBe(0);
}

const stepReached = (runId: string, step: number) => until(async () => ((await client.workflow.getHandle(runId).query(statusQuery)).step >= step ? true : undefined));

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const [inference, env] = [await freePort(), await freePort()];
  trainerPort = await freePort();
  ({ config, client } = await server.upStack(`
exp_name: trainer-recovery
run_dir: ${runDir()}
max_steps: 8
rollout_batch_size: 2
num_return_sequences_in_group: 4
async_generation_ratio: 1
trainer_state_save_steps: 3
custom_envs:
  arith: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 32 }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: trainer-recovery }
engines:
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: { sim: { c0: 0.01, c1: 0.0005 } } }]
  # a train step takes a while, so a kill can land in one
  trainer: { url: "http://127.0.0.1:${trainerPort}", backend: sim, options: { sim_seconds_per_sample: 0.05 } }
  env: { url: "http://127.0.0.1:${env}" }
`, { supervise: false }));
});

afterAll(() => server?.downStack(config, client));

describe('trainer recovery', () => {
  it('a trainer killed with SIGKILL mid-run is restored and caught up by the run itself: every step trained once', async () => {
    start('trainer-killed');
    await stepReached('trainer-killed', 4); // past the state saved at version 3
    process.kill(readPid(path.join(server.stateDir, 'pids', `engine-trainer-${trainerPort}.pid`)), 'SIGKILL');
    const up = rollflow('dev', 'up', config, '--no-supervise'); // as an operator would: starts what is not running
    expect(up.status, up.stderr).toBe(0);
    expect(up.stdout).toContain(`engine-trainer-${trainerPort}: started`);

    const final = (await client.workflow.getHandle('trainer-killed').result()) as { step: number; version: number };
    expect([final.step, final.version]).toEqual([8, 8]);
    const records = readJsonl<Record<string, number>>(path.join(runDataDir(runDir(), 'trainer-killed'), 'metrics.jsonl')).filter((r) => (r.run_id as unknown) === 'trainer-killed');
    expect(records.map((r) => [r.step, r.version])).toEqual(Array.from({ length: 8 }, (_, s) => [s, s + 1])); // one record a step, none skipped
    const recovered = records.filter((r) => r[REPLAYED] !== undefined);
    expect(recovered).toHaveLength(1); // one kill, one recovery
    expect(recovered[0]![REPLAYED]).toBeGreaterThan(0);
    const uids = readdirSync(path.join(runDir(), 'samples', batchDir('trainer-killed'))).flatMap((f) => readJsonl<{ uid: string }>(path.join(runDir(), 'samples', batchDir('trainer-killed'), f)).map((s) => s.uid));
    expect(new Set(uids).size).toBe(8 * B);
    // The saved states are pruned to the newest two (state at the start, then every 3 versions, and the end's 6).
    expect(readdirSync(trainerStateDir(runDataDir(runDir(), 'trainer-killed'))).sort()).toEqual(['origin-launch-weights', 'v3', 'v6']);
  });

  it('a killed trainer whose newest saved state is corrupt is restored from the previous one: the run completes', async () => {
    start('state-corrupt');
    await stepReached('state-corrupt', 7); // states v3 and v6 saved
    process.kill(readPid(path.join(server.stateDir, 'pids', `engine-trainer-${trainerPort}.pid`)), 'SIGKILL');
    // Dead trainer, so no state is saved meanwhile: damage the newest one (as a torn write or a bad disk would).
    const states = trainerStateDir(runDataDir(runDir(), 'state-corrupt'));
    const newest = readdirSync(states).filter((n) => /^v\d+$/.test(n)).sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))).pop()!;
    writeFileSync(path.join(states, newest, 'sim_state.json'), '{"seed": -1}');
    const up = rollflow('dev', 'up', config, '--no-supervise');
    expect(up.status, up.stderr).toBe(0);

    const final = (await client.workflow.getHandle('state-corrupt').result()) as { step: number; version: number };
    expect([final.step, final.version]).toEqual([8, 8]);
    const records = readJsonl<Record<string, number>>(path.join(runDataDir(runDir(), 'state-corrupt'), 'metrics.jsonl')).filter((r) => (r.run_id as unknown) === 'state-corrupt');
    expect(records.map((r) => [r.step, r.version])).toEqual(Array.from({ length: 8 }, (_, s) => [s, s + 1]));
    expect(records.filter((r) => r[REPLAYED] !== undefined)).toHaveLength(1);
    // The corrupt state was passed over, moved aside and recorded with the reason.
    expect(readdirSync(states)).toContain(`${newest}.corrupt`);
    const skipped = readFileSync(path.join(states, 'recovery.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { version: number; reason: string });
    expect(skipped).toEqual([{ run_id: 'state-corrupt', version: Number(newest.slice(1)), skipped: 'corrupt', reason: expect.stringContaining('sim_state.json does not match its checksum') }]);
  });

  it('a second run on a trainer a live run holds is refused, naming the holder, and the holder is not harmed', async () => {
    // More steps than the test waits for: a holder of a few steps could finish (and free the trainer) in the
    // second the CLI takes to start the intruder. It is cancelled once it has trained past the refusal.
    start('holder', `max_steps=${UNREACHED_STEPS}`);
    await stepReached('holder', 1);
    start('intruder', 'max_steps=2');
    const refused = await client.workflow.getHandle('intruder').result().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(WorkflowFailedError);
    const cause = innermostCause(refused) as ApplicationFailure;
    expect([cause.type, cause.message]).toEqual(['TrainerHeldError', expect.stringContaining('held by run holder, which is still running')]);
    const holderHandle = client.workflow.getHandle('holder');
    const refusedAt = (await holderHandle.query(statusQuery)).step;
    await stepReached('holder', refusedAt + 1);
    await holderHandle.signal(cancelRun);
    const holder = (await holderHandle.result()) as { step: number; version: number; cancelled?: { atStep: number } };
    expect(holder.step).toBeGreaterThan(refusedAt);
    expect([holder.version, holder.cancelled?.atStep]).toEqual([holder.step, holder.step]); // one lineage, every step trained once
  });
});
