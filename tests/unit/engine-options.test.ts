// Model-backed engines take their model and optimizer settings from the run
// config (actor_infer / actor_train); an engine's own options win; sim takes none.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/configs';
import { launchedEngines, stateDirOptions, trainerExportDir } from '../../src/stack/engines';

const optionsOf = (raw: Record<string, unknown>) => Object.fromEntries(launchedEngines(parseConfig(raw, 'test', '/work')).map((e) => [e.role, e.options]));

describe('engine options from the run config', () => {
  it('passes the model and the optimizer settings to torch servers', () => {
    const o = optionsOf({
      actor_train: { model_args: { model_name_or_path: 'tiny:small' }, training_args: { learning_rate: 1e-3, per_device_train_batch_size: 8 } },
      engines: { inference: [{ url: 'http://127.0.0.1:8301', backend: 'torch' }], trainer: { url: 'http://127.0.0.1:8401', backend: 'torch' } },
    });
    expect(o.inference).toEqual({ model: 'tiny:small' });
    expect(o.trainer).toEqual({ model: 'tiny:small', learning_rate: 1e-3, weight_decay: 0, max_grad_norm: 1, micro_batch_size: 8 });
    expect(o.env).toEqual({});
  });

  it('passes a learning-rate schedule, decaying over max_steps, with warmup in steps or as transformers rounds a ratio', () => {
    const torch = { engines: { trainer: { url: 'http://127.0.0.1:8401', backend: 'torch' } } };
    const cosine = optionsOf({ ...torch, max_steps: 30, actor_train: { training_args: { lr_scheduler_type: 'cosine', warmup_ratio: 0.1 } } });
    expect(cosine.trainer).toMatchObject({ lr_scheduler_type: 'cosine', warmup_steps: 3, lr_total_steps: 30 });
    const warm = optionsOf({ ...torch, max_steps: 7, actor_train: { training_args: { lr_scheduler_type: 'constant_with_warmup', warmup_steps: 2 } } });
    expect(warm.trainer).toMatchObject({ lr_scheduler_type: 'constant_with_warmup', warmup_steps: 2 });
    expect(warm.trainer).not.toHaveProperty('lr_total_steps');
    expect(optionsOf({ ...torch, max_steps: 9, actor_train: { training_args: { lr_scheduler_type: 'linear', warmup_ratio: 0.15 } } }).trainer).toMatchObject({ warmup_steps: 2 }); // ⌈1.35⌉
  });

  it('actor_infer may name its own model; explicit engine options override the config', () => {
    const o = optionsOf({
      actor_infer: { model_args: { model_name_or_path: '/models/infer' } },
      engines: { inference: [{ url: 'http://127.0.0.1:8301', backend: 'torch', options: { max_batch: 4 } }], trainer: { url: 'http://127.0.0.1:8401', backend: 'torch', options: { learning_rate: 5e-4 } } },
    });
    expect(o.inference).toEqual({ model: '/models/infer', max_batch: 4 });
    expect(o.trainer).toMatchObject({ model: 'tiny:default', learning_rate: 5e-4 });
  });

  it('a judge server (engines.judge) is launched with its own options only, never the policy\'s model', () => {
    const raw = {
      actor_infer: { model_args: { model_name_or_path: '/models/policy' } },
      engines: { inference: [{ url: 'http://127.0.0.1:8301', backend: 'torch' }], judge: { url: 'http://127.0.0.1:8302', options: { model: 'tiny:default+warm:add' } } },
    };
    const engines = launchedEngines(parseConfig(raw, 'test', '/work'));
    expect(engines.map((e) => [e.configPath, e.role, e.backend, e.options])).toEqual([
      ['engines.inference[0]', 'inference', 'torch', { model: '/models/policy' }],
      ['engines.trainer', 'trainer', 'sim', {}],
      ['engines.env', 'env', 'python', {}],
      ['engines.judge', 'inference', 'torch', { model: 'tiny:default+warm:add' }],
    ]);
    expect(launchedEngines(parseConfig({}, 'test', '/work')).map((e) => e.configPath)).not.toContain('engines.judge'); // none unless configured
  });

  it('a launched env server writes its action log, and a trainer its weights, under the state dir unless the config says otherwise', () => {
    const byRole = Object.fromEntries(launchedEngines(parseConfig({}, 'test', '/work')).map((e) => [e.role, stateDirOptions(e, '/state')]));
    expect(byRole.env).toEqual({ action_log: '/state/env-actions/engine-env-8501.jsonl' });
    expect(byRole.trainer).toEqual({ export_dir: '/state/weights/engine-trainer-8401', step_log: '/state/trainer-steps/engine-trainer-8401.jsonl' });
    expect(byRole.inference).toEqual({ weights_cache_dir: '/state/weights-cache/engine-inference-8301' });
  });

  it('with a bucket store a launched trainer exports into the bucket, under the prefix, through a scratch dir under the state dir', () => {
    const trainerOf = (raw: Record<string, unknown>) => launchedEngines(parseConfig(raw, 'test', '/work')).find((e) => e.role === 'trainer')!;
    const bucket = { sample_store: { kind: 's3', bucket: 'rollflow', prefix: 'team-a/runs' } };
    const trainer = trainerOf(bucket);
    expect(trainerExportDir(trainer, '/state')).toBe('s3://rollflow/team-a/runs/weights/engine-trainer-8401');
    expect(stateDirOptions(trainer, '/state')).toEqual({
      export_dir: 's3://rollflow/team-a/runs/weights/engine-trainer-8401',
      export_scratch_dir: '/state/weights/engine-trainer-8401',
      state_scratch_dir: '/state/trainer-state-scratch/engine-trainer-8401', // the run names s3:// states (RunPlan.bucketRunDir)
      step_log: '/state/trainer-steps/engine-trainer-8401.jsonl',
    });
    expect(trainerExportDir(trainerOf({ sample_store: { kind: 's3', bucket: 'rollflow' } }), '/state')).toBe('s3://rollflow/weights/engine-trainer-8401'); // no prefix
    // The config's export_dir wins, local or not; a local one needs no scratch dir.
    const own = (export_dir: string) => trainerOf({ ...bucket, engines: { trainer: { url: 'http://127.0.0.1:8401', options: { export_dir } } } });
    expect(stateDirOptions(own('/disk/weights'), '/state')).toEqual({ export_dir: '/disk/weights', state_scratch_dir: '/state/trainer-state-scratch/engine-trainer-8401', step_log: '/state/trainer-steps/engine-trainer-8401.jsonl' });
    expect(stateDirOptions(own('s3://other/w'), '/state')).toMatchObject({ export_dir: 's3://other/w', export_scratch_dir: '/state/weights/engine-trainer-8401' });
  });

  it('with a bucket store launched env servers keep their snapshots in the bucket, all in one place; the config may say otherwise', () => {
    const envOf = (raw: Record<string, unknown>) => launchedEngines(parseConfig(raw, 'test', '/work')).find((e) => e.role === 'env')!;
    const bucket = { sample_store: { kind: 's3', bucket: 'rollflow', prefix: 'team-a/runs' } };
    const options = (raw: Record<string, unknown>) => ({ ...stateDirOptions(envOf(raw), '/state'), ...envOf(raw).options });
    expect(options(bucket)).toEqual({ action_log: '/state/env-actions/engine-env-8501.jsonl', snapshot_dir: 's3://rollflow/team-a/runs/env-snapshots' });
    expect(options({ ...bucket, engines: { env: { url: 'http://127.0.0.1:8501', options: { snapshot_dir: '/shared/snapshots' } } } })).toMatchObject({ snapshot_dir: '/shared/snapshots' });
    expect(options({})).not.toHaveProperty('snapshot_dir'); // a directory store: the servers' default, the host's temp dir
  });

  it('gives sim servers nothing they would not understand', () => {
    const o = optionsOf({ engines: { inference: [{ url: 'http://127.0.0.1:8301', backend: 'sim', options: { max_batch: 4 } }] } });
    expect([o.inference, o.trainer]).toEqual([{ max_batch: 4 }, {}]);
  });
});
