// The run plan built from a config: env tags split per step, algorithm
// settings passed to the trainer only when set, and the metrics log that
// stays exact when its activity is retried (its trackers still get a record retried on another worker).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { MockActivityEnvironment } from '../helpers/mock-activity';
import { describe, expect, it } from 'vitest';
import { trainingActivities } from '../../src/activities/training';
import { createLogger } from '../../src/logging';
import { RunTrackers, type TrackingSpec } from '../../src/trackers';
import type { ActivityDeps } from '../../src/activities/deps';
import { buildPlan } from '../../src/client/plan';
import { trainerBinding } from '../../src/workflows/run-plan';
import { ConfigError, parseConfig } from '../../src/configs';
import { registry } from '../../src/monitoring/run-metrics';
import { METRIC } from '../../src/core';

const envs = {
  a: { env_type: 'latency_sim', max_steps: 2, env_config: { turns: 2 } },
  b: { env_type: 'frozen_lake', max_steps: 3, max_tokens_per_step: 16 },
  c: { env_type: 'arithmetic' },
};
const plan = (raw: Record<string, unknown>) => buildPlan(parseConfig(raw, 'test', '/work'), 'run-1');

describe('run plan', () => {
  it('splits a step\'s groups among the tags as num_groups_partition says', () => {
    const p = plan({ custom_envs: envs, train_env_manager: { num_env_groups: 4, group_size: 2, tags: ['a', 'b'], num_groups_partition: [3, 1] } });
    expect(p.envs.map((e) => [e.tag, e.groupsPerStep, e.spec.type, e.maxTokens])).toEqual([
      ['a', 3, 'latency_sim', 512], // generating_args.max_new_tokens when the env sets none
      ['b', 1, 'frozen_lake', 16],
    ]);
  });

  it('splits evenly when no partition is given (the remainder to the first tags)', () => {
    const p = plan({ custom_envs: envs, train_env_manager: { num_env_groups: 5, group_size: 1, tags: ['a', 'b', 'c'] } });
    expect(p.envs.map((e) => e.groupsPerStep)).toEqual([2, 2, 1]);
  });

  it('domain_interleave_probs goes to the plan and to the training dataset env (not the validation one), which orders its rows by domain', () => {
    const data = { data: { env_type: 'dataset', env_config: { path: 'rows.jsonl', holdout: 2 } } };
    const p = plan({ custom_envs: data, domain_interleave_probs: { math: 0.75, qa: 0.25 }, eval_steps: 1, val_env_manager: { num_env_groups: 1, group_size: 1, tags: ['data'] } });
    expect(p.domainInterleave).toEqual({ math: 0.75, qa: 0.25 });
    expect(p.envs[0]!.spec.config).toEqual({ path: 'rows.jsonl', holdout: 2, domain_interleave_probs: { math: 0.75, qa: 0.25 } });
    expect(p.validation!.envs[0]!.spec.config).toEqual({ path: 'rows.jsonl', holdout: 2 });
    expect(plan({ custom_envs: data }).domainInterleave).toBeUndefined();
  });

  it('a single-turn run needs exactly one env', () => {
    expect(() => plan({ custom_envs: { a: envs.a, c: envs.c } })).toThrow(ConfigError);
    expect(plan({ custom_envs: { c: envs.c } }).envs.map((e) => e.tag)).toEqual(['c']);
  });

  it('passes the algorithm settings that are set, and only those', () => {
    const p = plan({ custom_envs: { c: envs.c }, pg_variant: 'cispo', cispo_epsilon_high: 0.3, use_kl_loss: true, kl_loss_coef: 0.01 });
    expect(p.train).toEqual({ pg_variant: 'cispo', adv_estimator: 'grpo', ppo_epochs: 1, temperature: 1, cispo_epsilon_high: 0.3, use_kl_loss: true, kl_loss_coef: 0.01 });
  });

  it('passes the newer losses\' settings, and Dr. GRPO\'s constant is the generation budget unless given', () => {
    const filters = [{ enabled: true, agg_type: 'geometric' as const, ratio_low: 0.5, ratio_high: 2 }];
    const p = plan({
      custom_envs: { c: envs.c }, pg_variant: 'gspo', adv_estimator: 'rloo', reward_norm: 'none', loss_agg_mode: 'seq_mean_token_sum_norm',
      kl_loss_type: 'low_var_kl', add_token_level_kl: true, init_kl_coef: 0.05, kl_penalty: 'mse', train_infer_correction: { filters },
      actor_infer: { generating_args: { max_new_tokens: 64 } },
    });
    expect(p.train).toMatchObject({ pg_variant: 'gspo', adv_estimator: 'rloo', reward_norm: 'none', loss_agg_mode: 'seq_mean_token_sum_norm', loss_scale_factor: 64, kl_loss_type: 'low_var_kl', add_token_level_kl: true, init_kl_coef: 0.05, kl_penalty: 'mse' });
    expect(p.train.train_infer_correction?.filters).toEqual(filters);
    expect(plan({ custom_envs: { c: envs.c }, loss_agg_mode: 'seq_mean_token_sum_norm', loss_scale_factor: 300 }).train.loss_scale_factor).toBe(300);
    expect(plan({ custom_envs: { c: envs.c }, loss_agg_mode: 'token_mean' }).train.loss_scale_factor).toBeUndefined();
  });

  it('rewards become each dataset env\'s domain routes; a dataset env with its own verifier and other envs keep their config', () => {
    const data = { env_type: 'dataset', env_config: { path: 'rows.jsonl' } };
    const rewards = { m: { type: 'math_verify' as const, tag_included: ['math', 'gsm'] }, c: { type: 'code_exec' as const, tag_included: ['code'], config: { mode: 'fraction' } } };
    const p = plan({ custom_envs: { data, fixed: { env_type: 'dataset', env_config: { path: 'x.jsonl', verifier: 'exact_match' } } }, rewards, train_env_manager: { num_env_groups: 2, group_size: 1, tags: ['data', 'fixed'] } });
    expect(p.envs[0]!.spec.config).toEqual({ path: 'rows.jsonl', domain_rewards: { math: { verifier: 'math_verify' }, gsm: { verifier: 'math_verify' }, code: { verifier: 'code_exec', config: { mode: 'fraction' } } } });
    expect(p.envs[1]!.spec.config).toEqual({ path: 'x.jsonl', verifier: 'exact_match' });
  });

  it('a dataset env that trains and validates needs a holdout, named in the error; one of its own for validation does not', () => {
    const data = (holdout?: number) => ({ env_type: 'dataset', env_config: { path: 'rows.jsonl', ...(holdout ? { holdout } : {}) } });
    const val = { val_env_manager: { num_env_groups: 2, group_size: 1, tags: ['data'] }, eval_steps: 5 };
    expect(() => plan({ custom_envs: { data: data() }, ...val })).toThrow(/custom_envs\.data\.env_config\.holdout: .*without a holdout validation would score training rows/);
    expect(plan({ custom_envs: { data: data(0.1) }, ...val }).validation?.envs.map((e) => e.tag)).toEqual(['data']);
    const own = plan({ custom_envs: { data: data(), held: data() }, train_env_manager: { num_env_groups: 1, group_size: 1, tags: ['data'] }, val_env_manager: { num_env_groups: 1, group_size: 1, tags: ['held'] }, eval_steps: 5 });
    expect(own.validation?.envs.map((e) => e.tag)).toEqual(['held']);
  });

  it('validation: eval_steps needs val_env_manager, named in the error; with it, the val envs are planned', () => {
    expect(() => plan({ custom_envs: { c: envs.c }, eval_steps: 2 })).toThrow(/val_env_manager/);
    const p = plan({ custom_envs: envs, eval_steps: 2, train_env_manager: { num_env_groups: 2, group_size: 2, tags: ['c'] }, val_env_manager: { num_env_groups: 3, group_size: 1, tags: ['c', 'b'] } });
    expect(p.validation?.everySteps).toBe(2);
    expect(p.validation?.groupSize).toBe(1);
    expect(p.validation?.envs.map((e) => [e.tag, e.groupsPerStep])).toEqual([['c', 2], ['b', 1]]);
    expect(plan({ custom_envs: { c: envs.c } }).validation).toBeUndefined();
  });

  it('carries each env\'s env_calls (auto unless set); a wrong value names the key and the choices', () => {
    const p = plan({ custom_envs: { ...envs, b: { ...envs.b, env_calls: 'local' } }, train_env_manager: { num_env_groups: 2, group_size: 1, tags: ['a', 'b'] } });
    expect(p.envs.map((e) => e.spec.calls)).toEqual(['auto', 'local']);
    expect(() => plan({ custom_envs: { c: { ...envs.c, env_calls: 'remote' } } })).toThrow(/custom_envs\.c\.env_calls.*"remote".*auto.*activity.*local/s);
  });

  it('carries max_tokens_per_episode only when set, and caps the first turn by it', () => {
    const p = plan({ custom_envs: { ...envs, b: { ...envs.b, max_tokens_per_episode: 10 }, a: { ...envs.a, max_tokens_per_episode: 2000 } }, train_env_manager: { num_env_groups: 3, group_size: 1, tags: ['a', 'b', 'c'] } });
    expect(p.envs.map((e) => [e.tag, e.spec.maxEpisodeTokens, e.maxTokens])).toEqual([['a', 2000, 512], ['b', 10, 10], ['c', undefined, 512]]);
    expect('maxEpisodeTokens' in p.envs[2]!.spec).toBe(false); // absent, as in every run from before the key: their workflows branch the same
    expect(() => plan({ custom_envs: { c: { ...envs.c, max_tokens_per_episode: 0 } } })).toThrow(/custom_envs\.c\.max_tokens_per_episode/);
  });

  it('carries each env\'s on_env_loss only when set (unset, the env\'s own declaration applies); a wrong value names the key and the choices', () => {
    const p = plan({ custom_envs: { ...envs, b: { ...envs.b, on_env_loss: 'restart' } }, train_env_manager: { num_env_groups: 2, group_size: 1, tags: ['a', 'b'] } });
    expect(p.envs.map((e) => e.spec.onLoss)).toEqual([undefined, 'restart']);
    expect(() => plan({ custom_envs: { c: { ...envs.c, on_env_loss: 'retry' } } })).toThrow(/custom_envs\.c\.on_env_loss.*"retry".*replay.*restart.*drop/s);
  });

  it('carries the rollout mode', () => {
    expect(plan({ custom_envs: { c: envs.c } }).rolloutMode).toBe('env_async');
    expect(plan({ custom_envs: { c: envs.c }, rollout_mode: 'lockstep' }).rolloutMode).toBe('lockstep');
  });

  it('with a bucket store, the trainer\'s states go to the bucket under the run\'s prefix; with a directory store, under the run\'s directory', () => {
    const bucket = plan({ custom_envs: { c: envs.c }, sample_store: { kind: 's3', bucket: 'rollflow', prefix: 'team-a/runs' } });
    expect(bucket.bucketRunDir).toBe('s3://rollflow/team-a/runs/run-1');
    expect(trainerBinding(bucket).binding?.stateDir).toBe('s3://rollflow/team-a/runs/run-1/trainer-state');
    const local = plan({ custom_envs: { c: envs.c } });
    expect(local.bucketRunDir).toBeUndefined();
    expect(trainerBinding(local).binding?.stateDir).toBe(`${local.runDir}/trainer-state`);
  });
});

describe('appendMetrics', () => {
  it('writes a step once even when the activity is retried after its write', async () => {
    const runDir = mkdtempSync(path.join(tmpdir(), 'rollflow-metrics-'));
    const { appendMetrics } = trainingActivities({} as ActivityDeps);
    await appendMetrics({ runDir, record: { run_id: 'r', step: 0, 'rollout/samples': 8 } });
    await appendMetrics({ runDir, record: { run_id: 'r', step: 0, 'rollout/samples': 8 } }); // the retry
    await appendMetrics({ runDir, record: { run_id: 'other', step: 0, 'rollout/samples': 4 } });
    await appendMetrics({ runDir, record: { 'rollout/samples': 8, step: 1, run_id: 'r' } }); // key order does not matter
    const lines = readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { run_id: string; step: number });
    expect(lines.map((l) => `${l.run_id}:${l.step}`)).toEqual(['r:0', 'other:0', 'r:1']);
  });

  it('feeds the worker\'s /metrics: a retry sets the gauges (here too if another worker wrote the record) and adds no counts twice', async () => {
    const runDir = mkdtempSync(path.join(tmpdir(), 'rollflow-metrics-'));
    const { appendMetrics } = trainingActivities({} as ActivityDeps);
    const series = async (name: string, runId: string) => (await registry.getSingleMetric(name)!.get()).values.find((v) => v.labels.run_id === runId)?.value;
    const record = { run_id: 'r-prom', step: 0, version: 1, [METRIC.infraFailed]: 2 };
    await appendMetrics({ runDir, record });
    await appendMetrics({ runDir, record }); // the retry
    expect(await series('rollflow_run_infra_failed_samples_total', 'r-prom')).toBe(2);
    // Written by a worker that died before reporting it; retried on this one.
    writeFileSync(path.join(runDir, 'metrics.jsonl'), `${JSON.stringify({ run_id: 'r-died', step: 4, version: 5, [METRIC.infraFailed]: 1 })}\n`);
    await appendMetrics({ runDir, record: { run_id: 'r-died', step: 4, version: 5, [METRIC.infraFailed]: 1 } });
    expect(await series('rollflow_run_version', 'r-died')).toBe(5);
    expect(await series('rollflow_run_infra_failed_samples_total', 'r-died')).toBeUndefined();
  });

  it('feeds a record retried after its write to the trackers of a worker that had not got it, once', async () => {
    const runDir = mkdtempSync(path.join(tmpdir(), 'rollflow-metrics-'));
    const tracking: TrackingSpec = { trackWith: ['stdout'], kwargs: {}, hparams: {} };
    const record = { run_id: 'r', step: 0, 'rollout/samples': 8 };
    const worker = () => {
      const msgs: string[] = [];
      const log = createLogger('trackers', new Writable({ write: (chunk: Buffer, _enc, done) => done(void msgs.push((JSON.parse(chunk.toString()) as { msg: string }).msg)) }));
      return { msgs, appendMetrics: trainingActivities({ trackers: new RunTrackers(log) } as ActivityDeps).appendMetrics };
    };
    const [first, second] = [worker(), worker()];
    const activity = new MockActivityEnvironment();
    await activity.run(first.appendMetrics, { runDir, record, tracking });
    // The first worker died after its write (its trackers with it); the retry lands on the second, then again.
    await activity.run(second.appendMetrics, { runDir, record, tracking });
    await activity.run(second.appendMetrics, { runDir, record, tracking });
    expect(first.msgs).toEqual(['step 0']);
    expect(second.msgs).toEqual(['step 0']);
    expect(readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8').trim().split('\n')).toHaveLength(1);
  });
});
