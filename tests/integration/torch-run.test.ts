// A training run on the torch engines: a real (tiny, built from code) model
// generates, the torch trainer takes real gradient steps, and every step's
// weights reach the inference server. Checks what the run recorded: the
// batches, the trainer's metrics, the served weight version.
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, readJsonl, ROOT, TestDevServer } from './helpers/dev-server';
import { runDataDir } from '../../src/core';

let server: TestDevServer;
let config: string;
let inferenceUrl: string;

const rollflow = (...args: string[]) => server.rollflow(args, 900_000);

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  inferenceUrl = `http://127.0.0.1:${inference}`;
  config = path.join(server.stateDir, 'torch.yaml');
  writeFileSync(
    config,
    `
exp_name: torch-test
run_dir: ${server.stateDir}/run
max_steps: 3
eval_steps: 3
rollout_batch_size: 2
num_return_sequences_in_group: 4
is_num_return_sequences_expand: false
async_generation_ratio: 1
dataset_size: 64
entropy_loss_coef: 0.01  # a gradient even when every group's rewards tie (an untrained model mostly scores 0)
custom_envs:
  add: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 6, env_config: { max_operand: 9, ops: ["+"], prompt: compact } }
val_env_manager: { num_env_groups: 2, group_size: 2, tags: [add] }
actor_train:
  model_args: { model_name_or_path: "tiny:default" }
  training_args: { learning_rate: 1.0e-3, per_device_train_batch_size: 8 }
actor_infer:
  generating_args: { max_new_tokens: 6, temperature: 1.0 }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: torch-test }
engines:
  inference: [{ url: "${inferenceUrl}", backend: torch, options: { max_batch: 16, torch_threads: 1 } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: torch, options: { torch_threads: 1 } }
  env: { url: "http://127.0.0.1:${env}" }
`,
  );
  const up = rollflow('dev', 'up', config);
  expect(up.status, up.stderr).toBe(0);
});

afterAll(() => {
  if (server) rollflow('dev', 'down', config);
});

describe('a run on the torch engines', () => {
  // Three torch steps take seconds here; a cold, loaded 2-core machine gets the CLI call's own limit.
  it('trains a real model: gradient steps on generated tokens, each new version served', { timeout: 900_000 }, async () => {
    const r = rollflow('run', config, '--json', '--run-id', 'torch');
    expect(r.status, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').pop()!) as { steps: number; unique_uids_consumed: number };
    expect([summary.steps, summary.unique_uids_consumed]).toEqual([3, 3 * 8]);

    // The model's own tokens, each with its log-probability under the weights that generated it.
    const batchDir = path.join(server.stateDir, 'run', 'samples', 'torch', 'batches');
    const samples = readdirSync(batchDir).flatMap((f) => readJsonl(path.join(batchDir, f))) as { response_ids: number[]; old_logprobs: number[] }[];
    expect(samples).toHaveLength(24);
    for (const s of samples) {
      expect(s.old_logprobs).toHaveLength(s.response_ids.length);
      expect(s.old_logprobs.every((lp) => Number.isFinite(lp) && lp <= 0)).toBe(true);
    }

    // Every step took an optimizer step with a real gradient, and the inference server serves the last version.
    const metrics = readJsonl(path.join(runDataDir(path.join(server.stateDir, 'run'), 'torch'), 'metrics.jsonl'));
    expect(metrics.map((m) => m.step)).toEqual([0, 1, 2]);
    for (const m of metrics) {
      expect(m['train/actor/optimizer_steps']).toBe(1);
      expect(m['train/grad_norm']).toBeGreaterThan(0);
    }
    const state = (await (await fetch(`${inferenceUrl}/state`)).json()) as { backend: string; model: string; version: number };
    expect(state).toMatchObject({ backend: 'torch', model: 'tiny:default', version: 3 });

    // Validation scored the served weights before training and at the end.
    const val = readJsonl(path.join(runDataDir(path.join(server.stateDir, 'run'), 'torch'), 'validation.jsonl'));
    expect(val.map((v) => [v.step, v['val/samples']])).toEqual([[0, 4], [3, 4]]);
  });
});
