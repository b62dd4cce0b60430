// The pre-flight check `validate`, `run` and `dev up` share: what the schema
// passes but a run or a server would refuse at once, each problem at its
// config path. Python-side checks run the real `python -m rollflow_engines
// check` (offline: no server starts).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, parseConfig, type ConfigProblem } from '../../src/configs';
import { checkConfig } from '../../src/client/preflight';

const arith = { env_type: 'arithmetic', env_config: { max_operand: 9 } };
const torchEngines = { inference: [{ url: 'http://127.0.0.1:8301', backend: 'torch' }], trainer: { url: 'http://127.0.0.1:8401', backend: 'torch' } };

function problemsOf(raw: Record<string, unknown>, run = true): ConfigProblem[] {
  try {
    checkConfig(parseConfig(raw, 'test.yaml', '/work'), { run });
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}
const paths = (raw: Record<string, unknown>, run = true) => problemsOf(raw, run).map((p) => p.path);

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('pre-flight check', () => {
  it('passes a runnable config and notes nothing', () => {
    expect(checkConfig(parseConfig({ custom_envs: { arith } }, 't', '/work'), { run: true })).toEqual({ notes: [] });
  });

  it('checks the run plan only for a run: a stack needs no envs', () => {
    expect(problemsOf({ eval_steps: 2, custom_envs: { arith } })).toEqual([
      { path: 'val_env_manager', given: undefined, expected: 'the validation envs (num_env_groups, group_size, tags), since eval_steps is 2' },
    ]);
    expect(paths({})).toEqual(['custom_envs']);
    expect(paths({}, false)).toEqual([]);
  });

  it('checks TypeScript envs with their own parseConfig', () => {
    const problems = problemsOf({ custom_envs: { slow: { env_type: 'latency_sim', env_config: { turns: 0, p_stop: 2, nope: 1 } } } });
    expect(problems.map((p) => [p.path, p.given])).toEqual([
      ['custom_envs.slow.env_config.turns', 0],
      ['custom_envs.slow.env_config.p_stop', 2],
      ['custom_envs.slow.env_config.nope', 1],
    ]);
  });

  it('checks env types and env configs of the env server offline, with its own models', () => {
    const problems = problemsOf({ custom_envs: { lake: { env_type: 'frozen_lak' } } });
    expect(problems).toEqual([
      { path: 'custom_envs.lake.env_type', given: 'frozen_lak', expected: 'a registered env: one of arithmetic, dataset, frozen_lake, latency_sim, swe, swe_lite; did you mean "frozen_lake"?' },
    ]);
    expect(problemsOf({ custom_envs: { arith: { env_type: 'arithmetic', env_config: { max_operand: 0 } } } })).toEqual([
      { path: 'custom_envs.arith.env_config.max_operand', given: 0, expected: 'Input should be greater than or equal to 1' },
    ]);
    expect(paths({ custom_envs: { qa: { env_type: 'dataset', env_config: { path: 'qa.jsonl', verifier: 'math_verif' } } } })).toEqual(['custom_envs.qa.env_config.verifier']);
  });

  it('checks the options of launched engines, naming the run-config key an option came from', () => {
    expect(paths({ custom_envs: { arith }, engines: { inference: [{ url: 'http://127.0.0.1:8301', options: { max_bach: 4 } }, { url: 'http://127.0.0.1:8302', options: { max_batch: 0 } }] } })).toEqual([
      'engines.inference[0].options.max_bach',
      'engines.inference[1].options.max_batch',
    ]);
    // A torch server's model is actor_train's (or actor_infer's); both servers refusing it is one problem.
    expect(paths({ custom_envs: { arith }, engines: torchEngines, actor_train: { model_args: { model_name_or_path: 'tiny:nope' } } })).toEqual(['actor_train.model_args.model_name_or_path']);
    expect(paths({ custom_envs: { arith }, engines: torchEngines, actor_infer: { model_args: { model_name_or_path: '/no/such/model' } } })).toEqual(['actor_infer.model_args.model_name_or_path']);
    expect(paths({ custom_envs: { arith }, engines: { trainer: { url: 'http://127.0.0.1:8401', backend: 'megatron' } } })).toEqual(['engines.trainer.backend']);
    // fp16 is refused by the torch trainer (CPU training), not by the inference server: named where it was set.
    expect(paths({ custom_envs: { arith }, engines: torchEngines, actor_train: { model_args: { model_name_or_path: 'tiny:default', dtype: 'fp16' } } })).toEqual(['actor_train.model_args.dtype']);
  });

  it('leaves alone what it cannot know: servers it does not launch', () => {
    const remote = { url: 'http://10.0.0.9:8501', launch: false };
    const loaded = parseConfig({ custom_envs: { lake: { env_type: 'frozen_lak' } }, engines: { env: remote, inference: [{ ...remote, options: { max_bach: 1 } }] } }, 't', '/work');
    expect(checkConfig(loaded, { run: true }).notes).toEqual(['custom_envs.lake: not checked against the env server at http://10.0.0.9:8501 (engines.env.launch is false)']);
  });

  it('reports every local problem before asking python; a checker that cannot run is not a config error', () => {
    vi.stubEnv('ROLLFLOW_PYTHON', '/nonexistent/python');
    expect(paths({ custom_envs: { slow: { env_type: 'latency_sim', env_config: { turns: 0 } } } })).toEqual(['custom_envs.slow.env_config.turns']);
    let thrown: unknown;
    try {
      checkConfig(parseConfig({ custom_envs: { arith } }, 't', '/work'), { run: true });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(Error);
    expect(thrown).not.toBeInstanceOf(ConfigError);
    expect((thrown as Error).message).toMatch(/^could not check the config with python-engines \(\/nonexistent\/python -m rollflow_engines check\): .*ENOENT/);
  });
});
