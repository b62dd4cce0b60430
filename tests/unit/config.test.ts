import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { ConfigError, loadConfig, parseConfig, RunConfigSchema } from '../../src/configs';
import { engineSpecs } from '../../src/configs/engines';

function problemsOf(fn: () => unknown) {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

function tempYaml(text: string): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'rollflow-cfg-')), 'run.yaml');
  writeFileSync(file, text);
  return file;
}

describe('run config', () => {
  it('accepts an empty config and fills every default', () => {
    const { config, derived } = parseConfig({}, 'test', '/work');
    expect(config.async_generation_ratio).toBe(0);
    expect(config.engines.inference).toEqual([{ url: 'http://127.0.0.1:8301', backend: 'sim', launch: true, options: {} }]);
    expect(config.engines.trainer.backend).toBe('sim');
    expect(config.actor_train.training_args.per_device_train_batch_size).toBe(1);
    expect(derived.run_dir).toBe('/work/runs/rollflow');
    expect(derived.sample_store).toEqual({ kind: 'dir', path: '/work/runs/rollflow/samples' });
    expect(derived.infer_model).toBe('tiny:default');
  });

  it('derives B, the admission cap (1 + α)·B and ⌈α⌉', () => {
    // single-turn: B = rollout_batch_size · n = 16 · 4 = 64; α = 0.5 -> floor(1.5 · 64) = 96, ⌈0.5⌉ = 1
    const rlvr = parseConfig({ rollout_batch_size: 16, num_return_sequences_in_group: 4, async_generation_ratio: 0.5 }, 't').derived;
    expect([rlvr.samples_per_step, rlvr.groups_per_step, rlvr.group_size]).toEqual([64, 16, 4]);
    expect([rlvr.max_samples_in_system, rlvr.max_staleness]).toEqual([96, 1]);
    // agentic: B = num_env_groups · group_size = 8 · 16 = 128; α = 2 -> 3 · 128 = 384, ⌈2⌉ = 2
    const agentic = parseConfig(
      { async_generation_ratio: 2, custom_envs: { lake: { env_type: 'frozen_lake' } }, train_env_manager: { num_env_groups: 8, group_size: 16, tags: ['lake'] } },
      't',
    ).derived;
    expect([agentic.samples_per_step, agentic.max_samples_in_system, agentic.max_staleness]).toEqual([128, 384, 2]);
    // α = 0 is synchronous: the cap is exactly B and no staleness is allowed
    const sync = parseConfig({ rollout_batch_size: 3 }, 't').derived;
    expect([sync.max_samples_in_system, sync.max_staleness]).toEqual([3, 0]);
    // max_additional_running_prompts admits that many more groups: 3 · G = 3 · 4 samples
    const extra = parseConfig({ rollout_batch_size: 2, num_return_sequences_in_group: 4, max_additional_running_prompts: 3 }, 't').derived;
    expect([extra.samples_per_step, extra.max_samples_in_system, extra.max_staleness]).toEqual([8, 20, 0]);
    // redundant env groups: 36 groups of 12 run, a step takes ⌈256 / 12⌉ = 22 of them; the other 14 are spares admission lets run
    const lake = { lake: { env_type: 'frozen_lake' } };
    const redundant = parseConfig({ custom_envs: lake, train_env_manager: { num_env_groups: 36, group_size: 12, trajectories_per_step: 256, tags: ['lake'] } }, 't').derived;
    expect([redundant.groups_per_step, redundant.samples_per_step, redundant.spare_groups, redundant.max_samples_in_system]).toEqual([22, 264, 14, 432]);
    const exact = parseConfig({ custom_envs: lake, train_env_manager: { num_env_groups: 32, group_size: 8, tags: ['lake'] } }, 't').derived;
    expect([exact.groups_per_step, exact.spare_groups, exact.max_samples_in_system]).toEqual([32, 0, 256]);
  });

  it('trajectories_per_step cannot exceed what the env groups hold; max_failed_group_ratio is a share', () => {
    const lake = { lake: { env_type: 'frozen_lake' } };
    const problems = problemsOf(() => parseConfig({ custom_envs: lake, train_env_manager: { num_env_groups: 2, group_size: 4, trajectories_per_step: 9, tags: ['lake'] }, max_failed_group_ratio: 0 }, 't'));
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: 'train_env_manager.trajectories_per_step', expected: expect.stringContaining('at most num_env_groups × group_size = 8') }),
        expect.objectContaining({ path: 'max_failed_group_ratio', given: 0 }),
      ]),
    );
  });

  it("trajectory_workflows false: a group's turns must fit one workflow history (5,000 at most: G × max_steps)", () => {
    const env = (max_steps: number) => ({ swe: { env_type: 'latency_sim', max_steps } });
    const manager = { num_env_groups: 2, group_size: 16, tags: ['swe'] };
    expect(parseConfig({ trajectory_workflows: false, custom_envs: env(312), train_env_manager: manager }, 't').config.trajectory_workflows).toBe(false);
    const problems = problemsOf(() => parseConfig({ trajectory_workflows: false, custom_envs: env(313), train_env_manager: manager }, 't'));
    expect(problems).toEqual([expect.objectContaining({ path: 'trajectory_workflows', given: false, expected: expect.stringContaining("a group's 16 trajectories of up to 313 turns (custom_envs.swe.max_steps)") })]);
    // Each trajectory its own workflow: no such bound.
    expect(parseConfig({ custom_envs: env(313), train_env_manager: manager }, 't').config.trajectory_workflows).toBe(true);
  });

  it('names the path, the value given and what was expected', () => {
    const problems = problemsOf(() =>
      parseConfig({ rollout_batch_size: -4, pg_variant: 'ppo2', actor_infer: { generating_args: { temperature: 'hot' } }, engines: { inference: [] } }, 't'),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        { path: 'rollout_batch_size', given: -4, expected: 'expected a number >= 1' },
        { path: 'pg_variant', given: 'ppo2', expected: expect.stringContaining('expected one of "vanilla", "ppo"') },
        { path: 'actor_infer.generating_args.temperature', given: 'hot', expected: 'expected number' },
        { path: 'engines.inference', given: [], expected: 'expected at least 1 item(s)' },
      ]),
    );
  });

  it('suggests the nearest known key for an unknown one, at any depth', () => {
    const problems = problemsOf(() => parseConfig({ async_generation_ration: 2, actor_train: { training_args: { learning_rat: 1e-5 } } }, 't'));
    const byPath = Object.fromEntries(problems.map((p) => [p.path, p]));
    expect(Object.keys(byPath).sort()).toEqual(['actor_train.training_args.learning_rat', 'async_generation_ration']);
    expect(byPath['async_generation_ration']?.given).toBe(2);
    expect(byPath['async_generation_ration']?.expected).toContain('did you mean "async_generation_ratio"?');
    expect(byPath['actor_train.training_args.learning_rat']?.expected).toContain('did you mean "learning_rate"?');
    // far from every known key: no guess, but the known keys are listed
    const far = problemsOf(() => parseConfig({ temporal: { zzzzzzzz: 1 } }, 't'));
    expect(far[0]?.expected).toMatch(/^unknown key \(known here: address, namespace/);
  });

  it('rewards: each domain to one reward, and only where a dataset env can route it; python is not a verifier', () => {
    const data = { data: { env_type: 'dataset', env_config: { path: 'rows.jsonl' } } };
    const twice = problemsOf(() => parseConfig({ custom_envs: data, rewards: { a: { type: 'math_verify', tag_included: ['math'] }, b: { type: 'exact_match', tag_included: ['code', 'math'] } } }, 't'));
    expect(twice.map((p) => [p.path, p.expected])).toEqual([['rewards.b.tag_included[1]', 'domain "math" is already scored by rewards.a; a domain goes to one reward']]);
    const nowhere = problemsOf(() => parseConfig({ custom_envs: { lake: { env_type: 'frozen_lake' } }, rewards: { a: { type: 'math_verify', tag_included: ['math'] } } }, 't'));
    expect(nowhere.map((p) => p.path)).toEqual(['rewards']);
    expect(nowhere[0]?.expected).toMatch(/no custom_envs entry is an env_type dataset/);
    const python = problemsOf(() => parseConfig({ custom_envs: data, rewards: { a: { type: 'python', tag_included: ['math'] } } }, 't'));
    expect(python.map((p) => p.path)).toEqual(['rewards.a.type']);
    expect(parseConfig({ custom_envs: data, rewards: { a: { type: 'code_exec', tag_included: ['code'], config: { mode: 'fraction' } } } }, 't').config.rewards.a?.type).toBe('code_exec');
  });

  it('checks references between fields', () => {
    const problems = problemsOf(() =>
      parseConfig(
        {
          custom_envs: { lake: { env_type: 'frozen_lake' } },
          train_env_manager: { num_env_groups: 4, group_size: 2, tags: ['lake', 'sokoban'], num_groups_partition: [3, 2] },
          domain_interleave_probs: { math: 0.5, code: 0.5 },
          engines: { trainer: { url: 'http://10.0.0.5:8401' } },
        },
        't',
      ),
    );
    expect(problems.map((p) => p.path)).toEqual([
      'engines.trainer.url',
      'train_env_manager.tags[1]',
      'train_env_manager.num_groups_partition',
      'domain_interleave_probs',
    ]);
    expect(problems[0]?.expected).toContain('launch: true needs a loopback URL');
    expect(problems[1]?.expected).toBe('no custom_envs entry named "sokoban"; defined: lake');
    expect(problems[3]?.expected).toBe("needs exactly one training env, of env_type dataset (the shares are of its rows' domains); training draws from lake (frozen_lake), sokoban (undefined)");
  });

  it('sample_store: a directory by default, or a bucket with a key prefix; each misplaced or missing key is named', () => {
    const store = (raw: Record<string, unknown>) => parseConfig({ run_dir: '/r', sample_store: raw }, 't').derived.sample_store;
    expect(store({})).toEqual({ kind: 'dir', path: '/r/samples' });
    expect(store({ kind: 's3', bucket: 'rollflow' })).toEqual({ kind: 's3', bucket: 'rollflow', prefix: '' });
    expect(store({ kind: 's3', bucket: 'rollflow', prefix: 'team-a/runs' })).toEqual({ kind: 's3', bucket: 'rollflow', prefix: 'team-a/runs/' });
    expect(store({ kind: 's3', bucket: 'rollflow', prefix: 'team-a/' })).toEqual({ kind: 's3', bucket: 'rollflow', prefix: 'team-a/' });
    const problems = (raw: Record<string, unknown>) => problemsOf(() => parseConfig({ sample_store: raw }, 't')).map((p) => [p.path, p.given]);
    expect(problems({ kind: 's3' })).toEqual([['sample_store.bucket', undefined]]);
    expect(problems({ kind: 's3', bucket: 'rollflow', path: '/x' })).toEqual([['sample_store.path', '/x']]);
    expect(problems({ bucket: 'rollflow', prefix: 'p' })).toEqual([['sample_store.bucket', 'rollflow'], ['sample_store.prefix', 'p']]);
    expect(problems({ kind: 's3', bucket: 'No_Such' })).toEqual([['sample_store.bucket', 'No_Such']]);
    expect(problems({ kind: 's3', bucket: 'rollflow', prefix: 'a/../b' })).toEqual([['sample_store.prefix', 'a/../b']]);
    expect(problems({ kind: 's3', bucket: 'rollflow', access_key: 'x' }).map(([p]) => p)).toEqual(['sample_store.access_key'] /* unknown: credentials never come from the config */);
  });

  it('engines.*.listen: a launched server listens there while the run calls url; it needs launch and a loopback address', () => {
    const { config } = parseConfig({ engines: { trainer: { url: 'http://127.0.0.1:8401', listen: 'http://127.0.0.1:18401' } } }, 't');
    const trainer = engineSpecs(config).find((e) => e.role === 'trainer')!;
    expect([trainer.url, trainer.listen]).toEqual(['http://127.0.0.1:8401', 'http://127.0.0.1:18401']);
    expect(engineSpecs(config).find((e) => e.role === 'env')!.listen, 'defaults to url').toBe('http://127.0.0.1:8501');
    const notLaunched = problemsOf(() => parseConfig({ engines: { env: { url: 'http://10.0.0.5:8501', launch: false, listen: 'http://127.0.0.1:18501' } } }, 't'));
    expect(notLaunched.map((p) => [p.path, p.given])).toEqual([['engines.env.listen', 'http://127.0.0.1:18501']]);
    expect(notLaunched[0]?.expected).toContain('with launch: false rollflow starts nothing');
    const remote = problemsOf(() => parseConfig({ engines: { inference: [{ url: 'http://127.0.0.1:8301', listen: 'http://10.0.0.5:8301' }] } }, 't'));
    expect(remote.map((p) => p.path)).toEqual(['engines.inference[0].listen']);
    expect(remote[0]?.expected).toContain('loopback');
  });

  it('domain_interleave_probs: shares ≥ 0 summing to 1 (± 1e-6), of the rows of one training dataset env; each problem names the key and the value', () => {
    const data = { data: { env_type: 'dataset', env_config: { path: 'rows.jsonl' } } };
    const shares = (probs: unknown, extra: Record<string, unknown> = {}) => problemsOf(() => parseConfig({ custom_envs: data, domain_interleave_probs: probs, ...extra }, 't'));
    expect(parseConfig({ custom_envs: data, domain_interleave_probs: { math: 0.6, qa: 0.4 } }, 't').config.domain_interleave_probs).toEqual({ math: 0.6, qa: 0.4 });
    expect(parseConfig({ custom_envs: data, domain_interleave_probs: { a: 0.3333333, b: 0.3333333, c: 0.3333334 } }, 't').config.domain_interleave_probs).toBeDefined();
    const sum = shares({ math: 0.6, qa: 0.3 });
    expect(sum.map((p) => [p.path, p.given, p.expected])).toEqual([['domain_interleave_probs', { math: 0.6, qa: 0.3 }, 'expected each domain\'s share of a batch, summing to 1 (± 0.000001); these sum to 0.8999999999999999']]);
    const negative = shares({ math: -0.2, qa: 1.2 });
    expect(negative.map((p) => p.path)).toEqual(['domain_interleave_probs.math', 'domain_interleave_probs.qa']);
    expect(shares({ math: 'half' })[0]).toMatchObject({ path: 'domain_interleave_probs.math', given: 'half' });
    const lake = { lake: { env_type: 'frozen_lake' } };
    expect(problemsOf(() => parseConfig({ custom_envs: lake, domain_interleave_probs: { math: 1 } }, 't'))[0]?.expected).toBe(
      "needs exactly one training env, of env_type dataset (the shares are of its rows' domains); training draws from lake (frozen_lake)",
    );
    const two = problemsOf(() => parseConfig({ custom_envs: { ...data, ...lake }, train_env_manager: { num_env_groups: 2, group_size: 2, tags: ['data', 'lake'] }, domain_interleave_probs: { math: 1 } }, 't'));
    expect(two.map((p) => [p.path, p.expected])).toEqual([['domain_interleave_probs', "needs exactly one training env, of env_type dataset (the shares are of its rows' domains); training draws from data (dataset), lake (frozen_lake)"]]);
    const direct = problemsOf(() => parseConfig({ custom_envs: { data: { env_type: 'dataset', env_config: { path: 'rows.jsonl', domain_interleave_probs: { math: 1 } } } } }, 't'));
    expect(direct.map((p) => [p.path, p.expected])).toEqual([['custom_envs.data.env_config.domain_interleave_probs', "set by the run config's top-level domain_interleave_probs; give the shares there"]]);
  });

  it('refuses a warmup the learning-rate schedule would not use, and two warmups', () => {
    const warm = (training_args: Record<string, unknown>) => problemsOf(() => parseConfig({ actor_train: { training_args } }, 't')).map((p) => [p.path, p.expected]);
    expect(warm({ warmup_steps: 5 })).toEqual([['actor_train.training_args.warmup_steps', 'lr_scheduler_type constant has no warmup; use constant_with_warmup, linear or cosine']]);
    expect(warm({ lr_scheduler_type: 'cosine', warmup_steps: 5, warmup_ratio: 0.1 })).toEqual([['actor_train.training_args.warmup_ratio', 'warmup_steps (5) is set too; give one of the two']]);
    expect(warm({ lr_scheduler_type: 'polynomial' }).map(([path]) => path)).toEqual(['actor_train.training_args.lr_scheduler_type']);
    expect(parseConfig({ actor_train: { training_args: { lr_scheduler_type: 'cosine', warmup_ratio: 0.1 } } }, 't').config.actor_train.training_args.warmup_ratio).toBe(0.1);
  });

  it('reads YAML files with --set overrides typed as YAML', () => {
    const file = tempYaml('exp_name: demo\nasync_generation_ratio: 1\nengines:\n  inference:\n    - url: http://127.0.0.1:9000\n');
    const { config, source } = loadConfig(file, ['async_generation_ratio=2.5', 'engines.inference[0].backend=torch', 'partial_rollout=false']);
    expect(source).toBe(file);
    expect(config.async_generation_ratio).toBe(2.5);
    expect(config.engines.inference[0]).toEqual({ url: 'http://127.0.0.1:9000', backend: 'torch', launch: true, options: {} });
    expect(config.partial_rollout).toBe(false);
  });

  it('validates overrides exactly like the file', () => {
    const file = tempYaml('seed: 1\n');
    expect(problemsOf(() => loadConfig(file, ['seed=-1']))).toEqual([{ path: 'seed', given: -1, expected: 'expected a number >= 0' }]);
    expect(problemsOf(() => loadConfig(file, ['nonsense']))[0]?.path).toBe('--set');
    expect(problemsOf(() => loadConfig(file, ['seed.inner=3']))[0]).toEqual({ path: 'seed', given: 1, expected: 'a mapping, to set seed.inner' });
  });

  it('reports unreadable files, bad YAML and non-mapping documents', () => {
    expect(problemsOf(() => loadConfig('/nonexistent/run.yaml'))[0]?.expected).toContain('a readable file (ENOENT)');
    expect(problemsOf(() => loadConfig(tempYaml('seed: [1\n')))[0]?.path).toMatch(/^line \d+, column \d+$/);
    expect(problemsOf(() => loadConfig(tempYaml('seed: 1\nseed: 2\n')))[0]?.expected).toContain('valid YAML');
    expect(problemsOf(() => loadConfig(tempYaml('- a\n- b\n')))[0]?.expected).toBe('a mapping of config keys at the top level');
  });

  it('gives the same hash for the same config and a different one otherwise', () => {
    const a = parseConfig({ seed: 1, max_steps: 3 }, 't').hash;
    expect(parseConfig({ max_steps: 3, seed: 1 }, 't').hash).toBe(a);
    expect(parseConfig({ max_steps: 4, seed: 1 }, 't').hash).not.toBe(a);
  });

  it('documents every field with a one-line description', () => {
    const undocumented: string[] = [];
    const visit = (schema: z.core.$ZodType, at: string, described: boolean) => {
      const def = schema._zod.def as { type: string; innerType?: z.core.$ZodType; in?: z.core.$ZodType; shape?: Record<string, z.core.$ZodType>; element?: z.core.$ZodType; valueType?: z.core.$ZodType };
      const here = described || Boolean((schema as z.ZodType).description);
      if (def.innerType) return visit(def.innerType, at, here);
      if (def.type === 'pipe' && def.in) return visit(def.in, at, here);
      if (at && !here) undocumented.push(at);
      for (const [k, v] of Object.entries(def.shape ?? {})) visit(v, at ? `${at}.${k}` : k, false);
      if (def.element) visit(def.element, `${at}[]`, true);
      if (def.valueType) visit(def.valueType, `${at}.*`, true);
    };
    visit(RunConfigSchema, '', true);
    expect(undocumented).toEqual([]);
  });

  it('accepts every example config', () => {
    const dir = path.join(__dirname, '../../examples');
    const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(() => loadConfig(path.join(dir, f)), f).not.toThrow();
  });
});
