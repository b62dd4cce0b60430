// A training run whose sample store is a bucket on a real S3-compatible server
// (versitygw, the project's own script): the worker writes samples and batches
// there, the sim trainer reads each batch by its s3:// ref (boto3, verified
// against its digest), and nothing of the store touches the run directory. The
// trainer exports its weights into the bucket too (its default export_dir with
// a bucket store) and the sim inference server pulls each export by its ref.
// The trainer's saved states and its part of the final checkpoint are objects
// under the run's prefix (RunPlan.bucketRunDir), the checkpoint's manifest
// beside them; a new run resumes from that checkpoint by its s3:// ref.
// The worker and the engines get the store's address and key only from the
// standard AWS files, through the environment `dev up` passes on.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, ROOT, TestDevServer } from './helpers/dev-server';
import { TestObjectStore } from './helpers/object-store';
import { S3SampleStore } from '../../src/store';

const B = 8;
const STEPS = 4;
let objects: TestObjectStore;
let server: TestDevServer;
let config: string;
let client: Client;
let trainerPort: number;
let inferencePort: number;

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  objects = await TestObjectStore.start();
  Object.assign(process.env, objects.env); // the stack's processes inherit it (TestDevServer.env spreads process.env)
  server = await TestDevServer.create();
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  [trainerPort, inferencePort] = [trainer, inference];
  ({ config, client } = await server.upStack(`
exp_name: s3-run-test
run_dir: ${server.stateDir}/run
max_steps: ${STEPS}
trainer_state_save_steps: 2
rollout_batch_size: 2
num_return_sequences_in_group: 4
dataset_size: 64
sample_store: { kind: s3, bucket: rollflow, prefix: team-a/runs }
custom_envs:
  arith: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 32 }
train_env_manager: { num_env_groups: 2, group_size: 4, tags: [arith] }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: s3-run-test }
engines:
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: { sim: { c0: 0.005, length: { dist: fixed, mean: 16 } } } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim }
  env: { url: "http://127.0.0.1:${env}" }
`));
});

afterAll(async () => {
  await server?.downStack(config, client);
  objects?.stop();
});

async function keysUnder(prefix: string): Promise<string[]> {
  const s3 = new S3Client({});
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: 'rollflow', Prefix: prefix, ContinuationToken: token }));
    keys.push(...(page.Contents ?? []).map((o) => o.Key!));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys.sort();
}

describe('a run on a bucket store', () => {
  it('completes with every sample trained once; its samples and batches are objects in the bucket, none in the run directory', async () => {
    const r = server.rollflow(['run', config, '--json', '--run-id', 'on-s3'], 600_000);
    expect(r.status, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').pop()!) as { steps: number; samples_consumed: number; unique_uids_consumed: number };
    // Counted by the summary from the batch objects the trainer read (store.keys + getLines on the bucket).
    expect([summary.steps, summary.samples_consumed, summary.unique_uids_consumed]).toEqual([STEPS, STEPS * B, STEPS * B]);
    const batches = await keysUnder('team-a/runs/on-s3/batches/');
    expect(batches).toEqual(Array.from({ length: STEPS }, (_, i) => `team-a/runs/on-s3/batches/step-${String(i).padStart(6, '0')}.jsonl`));
    expect((await keysUnder('team-a/runs/on-s3/samples/')).length).toBeGreaterThanOrEqual(STEPS * B);
    expect(existsSync(path.join(server.stateDir, 'run', 'samples')), 'no directory store was written').toBe(false);
  });

  it('its step records are objects in the bucket, one per step, and `rollflow records` prints them as JSON lines', async () => {
    expect(await keysUnder('team-a/runs/on-s3/metrics/')).toEqual(Array.from({ length: STEPS }, (_, i) => `team-a/runs/on-s3/metrics/step-${String(i).padStart(6, '0')}.json`));
    expect(existsSync(path.join(server.stateDir, 'run', 'on-s3', 'metrics.jsonl')), 'no step log on the worker\'s disk').toBe(false);
    const r = server.rollflow(['records', 'on-s3', '--config', config], 120_000);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { run_id: string; step: number }).step)).toEqual(Array.from({ length: STEPS }, (_, i) => i));
    const missing = server.rollflow(['records', 'no-such-run', '--config', config], 120_000);
    expect([missing.status, missing.stderr]).toEqual([1, 'rollflow: no metrics.jsonl records of run "no-such-run" at s3://rollflow/team-a/runs/no-such-run\n']);
  });

  it('its weights went through the bucket: an export per version, manifest included, none left on the trainer\'s disk, each pulled by the inference server', async () => {
    const trainer = `engine-trainer-${trainerPort}`;
    const manifests = (await keysUnder(`team-a/runs/weights/${trainer}/`)).filter((k) => k.endsWith('/rollflow_export.json'));
    expect(manifests).toEqual(Array.from({ length: STEPS + 1 }, (_, v) => `team-a/runs/weights/${trainer}/v${v}/rollflow_export.json`));
    expect(readdirSync(path.join(server.stateDir, 'weights', trainer)), 'the export scratch is removed after each upload').toEqual([]);
    // The cache keeps the export served and the one before it: the last two versions.
    const cached = readdirSync(path.join(server.stateDir, 'weights-cache', `engine-inference-${inferencePort}`)).sort();
    expect(cached.map((name) => name.replace(/-[0-9a-f]{16}$/, ''))).toEqual([`team-a_runs_weights_${trainer}_v${STEPS - 1}`, `team-a_runs_weights_${trainer}_v${STEPS}`]);
  });

  it('its trainer states and its whole checkpoint are objects under the run\'s prefix; nothing of them on the worker\'s disk', async () => {
    // Saved at the start and every 2 steps (v0, v2, v4), the newest two kept; each a meta object beside its files.
    expect(await keysUnder('team-a/runs/on-s3/trainer-state/')).toEqual(['origin-launch-weights', ...[2, 4].flatMap((v) => [`v${v}/rollflow_checkpoint.json`, `v${v}/sim_state.json`])].map((k) => `team-a/runs/on-s3/trainer-state/${k}`));
    const last = `checkpoints/step-${String(STEPS).padStart(6, '0')}`;
    expect(await keysUnder(`team-a/runs/on-s3/${last}/`)).toEqual(['manifest.json', 'trainer/rollflow_checkpoint.json', 'trainer/sim_state.json'].map((k) => `team-a/runs/on-s3/${last}/${k}`));
    const manifest = await S3SampleStore.at(`s3://rollflow/team-a/runs/on-s3/${last}`).get<{ step: number; trainer_checkpoint: string }>('manifest.json');
    expect(manifest).toMatchObject({ step: STEPS, run_id: 'on-s3', trainer_checkpoint: `s3://rollflow/team-a/runs/on-s3/${last}/trainer` });
    const runDir = path.join(server.stateDir, 'run', 'on-s3');
    expect(existsSync(path.join(runDir, 'checkpoints')), 'no checkpoint directory was written').toBe(false);
    expect(existsSync(path.join(runDir, 'trainer-state')), 'no state directory was written').toBe(false);
    expect(readdirSync(path.join(server.stateDir, 'trainer-state-scratch', `engine-trainer-${trainerPort}`)), 'the state scratch is removed after each upload').toEqual([]);
  });

  it('a new run resumes from the checkpoint by its s3:// ref: the step count continues, no consumed prompt is trained again', async () => {
    const checkpoint = `s3://rollflow/team-a/runs/on-s3/checkpoints/step-${String(STEPS).padStart(6, '0')}`;
    const r = server.rollflow(['run', config, '--json', '--run-id', 'on-s3-resumed', '--resume-from', checkpoint, '--set', `max_steps=${STEPS + 2}`], 600_000);
    expect(r.status, r.stderr).toBe(0);
    // The run starts only once its trainer loaded the checkpoint's trainer part from the bucket (resumeTrainer).
    const summary = JSON.parse(r.stdout.trim().split('\n').pop()!) as { steps: number };
    expect(summary.steps).toBe(STEPS + 2);
    expect(r.stdout).toContain(`started from step ${STEPS} of on-s3`);
    const batchesOf = async (run: string) => Promise.all((await keysUnder(`team-a/runs/${run}/batches/`)).map((k) => S3SampleStore.at('s3://rollflow/team-a/runs').getLines<{ uid: string }>(k.slice('team-a/runs/'.length))));
    const resumed = await keysUnder('team-a/runs/on-s3-resumed/batches/');
    expect(resumed, 'steps 4 and 5: no jump, no repeat').toEqual([STEPS, STEPS + 1].map((i) => `team-a/runs/on-s3-resumed/batches/step-${String(i).padStart(6, '0')}.jsonl`));
    const before = new Set((await batchesOf('on-s3')).flat().map((x) => x.uid));
    const after = (await batchesOf('on-s3-resumed')).flat();
    expect(after).toHaveLength(2 * B);
    expect(after.filter((x) => before.has(x.uid))).toEqual([]);

    const missing = server.rollflow(['run', config, '--resume-from', 's3://rollflow/team-a/runs/no-such-run/checkpoints/step-000001'], 120_000);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('s3://rollflow/team-a/runs/no-such-run/checkpoints/step-000001');
  });
});
