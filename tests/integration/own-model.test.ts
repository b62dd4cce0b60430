// Your own model and data, end to end (examples/own-model.yaml's shape): a Hugging Face model
// directory that is not rollflow's tiny Llama (Qwen2 architecture, a BPE tokenizer, a ChatML
// template; built from code by python-engines/tests/models/hf_build.py), a JSON-lines dataset with
// two domains routed to their verifiers by `rewards`, rows held out for validation, Dr. GRPO's loss,
// a cosine learning-rate schedule with warmup,
// and a checkpoint that holds the trained policy as a Hugging Face directory.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, readJsonl, ROOT, TestDevServer } from './helpers/dev-server';
import { runDataDir } from '../../src/core';

let server: TestDevServer;
let config: string;
let envUrl: string;
const RUN = 'own';

const rollflow = (...args: string[]) => server.rollflow(args, 900_000);

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const model = path.join(server.stateDir, 'qwen2-bpe');
  const built = spawnSync(path.join(ROOT, '.venv/bin/python'), [path.join(ROOT, 'python-engines/tests/models/hf_build.py'), model], { encoding: 'utf8' });
  expect(built.status, built.stderr).toBe(0);
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  envUrl = `http://127.0.0.1:${env}`;
  config = path.join(server.stateDir, 'own-model.yaml');
  writeFileSync(
    config,
    `
exp_name: own-model-test
run_dir: ${server.stateDir}/run
max_steps: 2
eval_steps: 2
save_steps: 2
rollout_batch_size: 4
num_return_sequences_in_group: 4
is_num_return_sequences_expand: false
async_generation_ratio: 1
adv_estimator: grpo
norm_mean_type: group
norm_std_type: none
loss_agg_mode: seq_mean_token_sum_norm
custom_envs:
  mixed: { env_type: dataset, max_steps: 1, env_config: { path: ${ROOT}/examples/data/mixed-domains.jsonl, holdout: 8 } }
val_env_manager: { num_env_groups: 8, group_size: 1, tags: [mixed] }
domain_interleave_probs: { math: 0.75, qa: 0.25 }
rewards:
  arithmetic: { type: math_verify, tag_included: [math] }
  capitals: { type: exact_match, tag_included: [qa], config: { ignore_case: true } }
actor_train:
  model_args: { model_name_or_path: "${model}" }
  training_args: { learning_rate: 1.0e-3, per_device_train_batch_size: 16, lr_scheduler_type: cosine, warmup_steps: 1 }
actor_infer:
  generating_args: { max_new_tokens: 8, temperature: 1.0, top_k: 50 }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: own-model-test }
engines:
  inference: [{ url: "http://127.0.0.1:${inference}", backend: torch, options: { max_batch: 16, torch_threads: 1 } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: torch, options: { torch_threads: 1 } }
  env: { url: "${envUrl}" }
`,
  );
  const up = rollflow('dev', 'up', config);
  expect(up.status, up.stderr).toBe(0);
});

afterAll(() => {
  if (server) rollflow('dev', 'down', config);
});

/** The user message of each stored trajectory whose file name starts with `prefix`. */
function prompts(prefix: string): Set<string> {
  const dir = path.join(server.stateDir, 'run', 'samples', RUN, 'trajectories');
  return new Set(
    readdirSync(dir)
      .filter((f) => f.startsWith(prefix))
      .map((f) => (JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as { messages: { role: string; content: string }[] }).messages[0]!.content),
  );
}

describe('a run on your own model and data', () => {
  it('trains a Hugging Face directory on routed rewards, validates on held-out rows only, and exports the policy', { timeout: 900_000 }, async () => {
    const r = rollflow('run', config, '--json', '--run-id', RUN);
    expect(r.status, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').pop()!) as { steps: number; unique_uids_consumed: number };
    expect([summary.steps, summary.unique_uids_consumed]).toEqual([2, 2 * 16]);

    // Each domain went to its own verifier (the env server counts every scored reply by both).
    const metrics = await (await fetch(`${envUrl}/metrics`)).text();
    const scored = (domain: string, verifier: string) => Number(new RegExp(`rollflow_env_rewards_total\\{domain="${domain}",verifier="${verifier}"\\} (\\S+)`).exec(metrics)?.[1] ?? 0);
    expect(scored('math', 'math_verify')).toBeGreaterThan(0);
    expect(scored('qa', 'exact_match')).toBeGreaterThan(0);
    expect(metrics).not.toMatch(/rollflow_env_rewards_total\{domain="math",verifier="exact_match"\}/);

    // Validation scored the 8 held-out rows, and training never saw one of them.
    const trained = prompts('e');
    const validated = prompts('val');
    expect(validated.size).toBe(8);
    expect(trained.size).toBeGreaterThan(0);
    expect([...validated].filter((p) => trained.has(p))).toEqual([]);
    const val = readJsonl(path.join(runDataDir(path.join(server.stateDir, 'run'), RUN), 'validation.jsonl'));
    expect(val.map((v) => [v.step, v['val/samples']])).toEqual([[0, 8], [2, 8]]);

    // The schedule reached the trainer: step 0 warms up from 0, step 1 is cosine's first (undecayed) step of max_steps 2.
    const steps = readJsonl(path.join(runDataDir(path.join(server.stateDir, 'run'), RUN), 'metrics.jsonl'));
    expect(steps.map((m) => m['train/actor/lr'])).toEqual([0, 1e-3]);

    // The checkpoint holds the trained policy as a Hugging Face directory, tokenizer and template included.
    const hf = path.join(runDataDir(path.join(server.stateDir, 'run'), RUN), 'checkpoints', 'step-000002', 'trainer', 'hf');
    for (const file of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']) expect(existsSync(path.join(hf, file)), file).toBe(true);
    const template = JSON.parse(readFileSync(path.join(hf, 'tokenizer_config.json'), 'utf8')) as { chat_template?: string };
    const chatTemplate = template.chat_template ?? (existsSync(path.join(hf, 'chat_template.jinja')) ? readFileSync(path.join(hf, 'chat_template.jinja'), 'utf8') : '');
    expect(chatTemplate).toContain('<|im_start|>');
  });
});
