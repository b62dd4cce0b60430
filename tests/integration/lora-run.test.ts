// A LoRA run on the torch engines (docs/models.md): the trainer trains an adapter only, each step's
// sync ships the adapter alone, the inference server applies it and serves the new version, and the
// final checkpoint holds the merged policy with the adapter beside it. Checks what the run recorded.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, readJsonl, ROOT, TestDevServer } from './helpers/dev-server';
import { runDataDir } from '../../src/core';

const RUN = 'lora';
let server: TestDevServer;
let config: string;
let inferenceUrl: string;

const rollflow = (...args: string[]) => server.rollflow(args, 900_000);

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  inferenceUrl = `http://127.0.0.1:${inference}`;
  config = path.join(server.stateDir, 'lora.yaml');
  writeFileSync(
    config,
    `
exp_name: lora-test
run_dir: ${server.stateDir}/run
max_steps: 2
rollout_batch_size: 2
num_return_sequences_in_group: 4
is_num_return_sequences_expand: false
async_generation_ratio: 1
dataset_size: 32
entropy_loss_coef: 0.01  # a gradient even when every group's rewards tie
custom_envs:
  add: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 6, env_config: { max_operand: 9, ops: ["+"], prompt: compact } }
actor_train:
  model_args: { model_name_or_path: "tiny:default", lora_rank: 4, lora_target: "q_proj,v_proj" }
  training_args: { learning_rate: 1.0e-2, per_device_train_batch_size: 8 }
actor_infer:
  generating_args: { max_new_tokens: 6, temperature: 1.0 }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: lora-test }
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

describe('a LoRA run on the torch engines', () => {
  it('trains an adapter, syncs it to the inference server each step, and checkpoints the merged policy', { timeout: 900_000 }, async () => {
    const r = rollflow('run', config, '--json', '--run-id', RUN);
    expect(r.status, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').pop()!) as { steps: number };
    expect(summary.steps).toBe(2);

    const runDir = runDataDir(path.join(server.stateDir, 'run'), RUN);
    const metrics = readJsonl(path.join(runDir, 'metrics.jsonl'));
    expect(metrics.map((m) => [m.step, m['train/actor/optimizer_steps']])).toEqual([[0, 1], [1, 1]]);
    for (const m of metrics) expect(m['train/grad_norm']).toBeGreaterThan(0);

    // The server loaded the second step's export (an adapter it refuses unless it fits its own LoRA), and serves it.
    const state = (await (await fetch(`${inferenceUrl}/state`)).json()) as { backend: string; version: number };
    expect(state).toMatchObject({ backend: 'torch', version: 2 });
    const weights = JSON.parse(readFileSync(path.join(server.stateDir, 'run', 'samples', RUN, 'weights.json'), 'utf8')) as { version: number; path: string };
    expect(weights.version).toBe(2);
    expect(readdirSync(weights.path).filter((f) => f.endsWith('.safetensors'))).toEqual(['adapter_model.safetensors']);
    const manifest = JSON.parse(readFileSync(path.join(weights.path, 'rollflow_export.json'), 'utf8')) as { lora: { r: number; target_modules: string[] } };
    expect([manifest.lora.r, manifest.lora.target_modules]).toEqual([4, ['q_proj', 'v_proj']]);

    // The final checkpoint: the merged policy as a Hugging Face directory, the adapter beside it.
    const trainerDir = path.join(runDir, 'checkpoints', 'step-000002', 'trainer');
    for (const file of ['hf/config.json', 'hf/model.safetensors', 'hf/tokenizer.json', 'adapter/adapter_config.json', 'adapter/adapter_model.safetensors']) {
      expect(existsSync(path.join(trainerDir, file)), file).toBe(true);
    }
  });
});
