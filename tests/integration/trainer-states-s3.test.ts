// Trainer states and checkpoints in a bucket (a run whose sample store is s3: RunPlan.bucketRunDir), against a real
// versitygw and a real sim trainer process, through the training activities as tests/integration/trainer-states.test.ts
// runs them on a directory: states are objects under s3://<bucket>/<prefix><run id>/trainer-state, pruned in the
// bucket; a restarted trainer whose newest state has a byte flipped on the server's disk falls back to the previous
// one, replays the batches since, and the damaged state is removed and recorded; a checkpoint's trainer part goes to
// the bucket and a restarted trainer resumes from it.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MockActivityEnvironment } from '../helpers/mock-activity';
import type { ActivityDeps } from '../../src/activities/deps';
import { trainingActivities, type CheckpointManifest } from '../../src/activities/training';
import type { TrainerBinding } from '../../src/activities/trainer-recovery';
import { flipMiddleByte } from '../../src/chaos/file-faults';
import { batchKey, REPLAYED_STEPS, SKIPPED_STATES, trainerStateDir } from '../../src/core';
import { TrainerClient } from '../../src/gpu-bridge';
import { S3SampleStore } from '../../src/store';
import { TestEngine } from './helpers/engine';
import { TestObjectStore } from './helpers/object-store';

let server: TestObjectStore;
let engine: TestEngine;
let store: S3SampleStore;
let root: string;
beforeAll(async () => {
  server = await TestObjectStore.start();
  Object.assign(process.env, server.env); // this process's SDK and the trainer's boto3 read the same AWS files
  root = mkdtempSync(path.join(tmpdir(), 'rollflow-trainer-states-s3-'));
  store = new S3SampleStore({ bucket: 'rollflow', prefix: 'team/' });
  engine = await TestEngine.start('trainer', ['--backend', 'sim', '--option', `export_dir=${path.join(root, 'exports')}`, '--option', `state_scratch_dir=${path.join(root, 'scratch')}`]);
});
afterAll(() => {
  engine?.stop();
  server?.stop();
});

const batch = (tag: string) => [0, 1].map((i) => ({ uid: `${tag}-${i}`, group_id: tag, prompt_ids: [1, 10, 11], response_ids: [12, 13], old_logprobs: [-1, -1], reward: i }));

function setUp(runId: string) {
  const deps = { store, trainer: new TrainerClient(engine.url) } as unknown as ActivityDeps;
  // As RunPlan.bucketRunDir and trainerBinding give it for a bucket store with prefix "team/".
  const b: TrainerBinding = { runId, stateDir: trainerStateDir(`s3://rollflow/team/${runId}`), saveEverySteps: 2, options: {} as TrainerBinding['options'] };
  const act = trainingActivities(deps);
  const run = <T>(fn: () => Promise<T>): Promise<T> => new MockActivityEnvironment().run(fn) as Promise<T>;
  const step = async (s: number, tag: string) => {
    await store.putLines(batchKey(runId, s), batch(tag));
    return run(() => act.runTrainStep({ step: s, batchPath: store.locate(batchKey(runId, s)), options: b.options, binding: b }));
  };
  const stateKeys = () => store.keysUnder(`${runId}/trainer-state`);
  return { b, act, run, step, stateKeys, status: () => deps.trainer.status() };
}

describe('trainer states in a bucket', () => {
  it('a restarted trainer whose newest state is damaged in the bucket falls back to the previous one and replays the batches since', async () => {
    const { run, act, step, status, b, stateKeys } = setUp('corrupt');
    await run(() => act.initTrainer({ binding: b }));
    await store.put('corrupt/trainer-state/v1/.rollflow-state-uploading', {}); // an upload cut short, never finished
    for (let s = 0; s < 5; s++) await step(s, `c-${s}`); // states v2 and v4 (v0 and the v1 left-over pruned)
    expect(await stateKeys()).toEqual(['origin-launch-weights', 'v2/rollflow_checkpoint.json', 'v2/sim_state.json', 'v4/rollflow_checkpoint.json', 'v4/sim_state.json']);
    flipMiddleByte(server.objectFile('team/corrupt/trainer-state/v4/sim_state.json'));
    await engine.restart(); // holds no run, launch weights
    const next = await step(5, 'c-5');
    expect([next.version, next.metrics[REPLAYED_STEPS], next.metrics[SKIPPED_STATES]]).toEqual([6, 3, 1]); // v2 + steps 2, 3, 4
    expect((await status()).version).toBe(6);
    // The damaged v4 is gone from the bucket (no rename there), recorded with the trainer's reason.
    expect(await stateKeys()).toEqual(['origin-launch-weights', 'recovery.jsonl', 'v2/rollflow_checkpoint.json', 'v2/sim_state.json', 'v6/rollflow_checkpoint.json', 'v6/sim_state.json']);
    const [record] = await store.getLines<{ run_id: string; version: number; reason: string }>('corrupt/trainer-state/recovery.jsonl');
    expect(record).toMatchObject({ run_id: 'corrupt', version: 4 });
    expect(record!.reason).toContain('s3://rollflow/team/corrupt/trainer-state/v4/sim_state.json is corrupt');
  });

  it('a checkpoint goes to the bucket whole, its manifest beside its trainer part and nothing on the disk, and a restarted trainer resumes from it', async () => {
    const { run, act, step, status, b } = setUp('ckpt');
    await engine.restart();
    await run(() => act.initTrainer({ binding: b }));
    for (let s = 0; s < 3; s++) await step(s, `k-${s}`);
    const dir = path.join(root, 'ckpt', 'checkpoints', 'step-000003');
    const manifest = { run_id: 'ckpt', step: 3, version: 3, consumed: [], seed: 0, dataset_size: 8, config_hash: 'h' } satisfies CheckpointManifest;
    const trainerPath = 's3://rollflow/team/ckpt/checkpoints/step-000003/trainer';
    expect(await run(() => act.saveCheckpoint({ dir, manifest, binding: b, trainerPath }))).toBe('s3://rollflow/team/ckpt/checkpoints/step-000003');
    expect(await store.get('ckpt/checkpoints/step-000003/manifest.json')).toMatchObject({ trainer_checkpoint: trainerPath });
    expect(await store.keysUnder('ckpt/checkpoints/step-000003')).toEqual(['manifest.json', 'trainer/rollflow_checkpoint.json', 'trainer/sim_state.json']);
    expect(existsSync(dir), 'nothing of the checkpoint on the worker\'s disk').toBe(false);
    await engine.restart();
    const resumed = setUp('ckpt-resumed');
    expect(await run(() => resumed.act.resumeTrainer({ trainerCheckpoint: trainerPath, binding: resumed.b }))).toMatchObject({ version: 3 });
    expect(await status()).toMatchObject({ run_id: 'ckpt-resumed', version: 3 });
    expect(await resumed.stateKeys()).toEqual(['v3/rollflow_checkpoint.json', 'v3/sim_state.json']); // the resumed run's first state
  });
});
