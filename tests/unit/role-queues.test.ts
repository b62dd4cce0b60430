// temporal.route_by_role: the plan carries each engine role's queue to the workflows, a worker polls the queues
// of the roles it is given (every one by default), and what cannot work is refused by name.
import { describe, expect, it } from 'vitest';
import { buildPlan } from '../../src/client/plan';
import { parseRoles } from '../../src/cli';
import { ConfigError, parseConfig } from '../../src/configs';
import { queueOfRole, roleQueues } from '../../src/core';
import { workerRoles } from '../../src/worker';

const routed = { temporal: { task_queue: 'tq', route_by_role: true } };
const oneEnv = { custom_envs: { a: { env_type: 'arithmetic' } } };

describe('role task queues', () => {
  it('a routed run\'s plan names each engine role\'s queue; a run that does not route carries none', () => {
    expect(buildPlan(parseConfig({ ...routed, ...oneEnv }, 't', '/work'), 'r').queues).toEqual({ inference: 'tq-inference', trainer: 'tq-trainer', env: 'tq-env' });
    expect(buildPlan(parseConfig(oneEnv, 't', '/work'), 'r').queues).toBeUndefined();
    expect(queueOfRole('tq', 'main')).toBe('tq');
    expect(queueOfRole('tq', 'env')).toBe(roleQueues('tq').env);
  });

  it('a worker polls every queue the config schedules on, or the roles it is given', () => {
    expect(workerRoles(parseConfig(routed, 't', '/work'))).toEqual(['main', 'inference', 'trainer', 'env']);
    expect(workerRoles(parseConfig({}, 't', '/work'))).toEqual(['main']);
    expect(workerRoles(parseConfig(routed, 't', '/work'), ['env', 'inference', 'env'])).toEqual(['env', 'inference']);
    expect(workerRoles(parseConfig({}, 't', '/work'), ['main'])).toEqual(['main']);
  });

  it('an engine role on a config that does not route is refused, naming the setting', () => {
    expect(() => workerRoles(parseConfig({}, 't', '/work'), ['main', 'env'])).toThrow(/--role env: temporal\.route_by_role is false/);
  });

  it('--role takes known roles only', () => {
    expect(parseRoles('inference, env')).toEqual(['inference', 'env']);
    expect(() => parseRoles('inference,gpu')).toThrow(/got "inference,gpu"; expected roles among main, inference, trainer, env/);
    expect(() => parseRoles(',')).toThrow(/expected roles among/);
  });

  it('local env calls and turn activities are refused on a routed run: their env steps would run beside the workflow or the inference server, not an env server', () => {
    for (const calls of ['local', 'turn']) {
      const raw = { ...routed, custom_envs: { a: { env_type: 'arithmetic', env_calls: calls } } };
      expect(() => parseConfig(raw, 't', '/work')).toThrow(ConfigError);
      try {
        parseConfig(raw, 't', '/work');
      } catch (e) {
        expect(String((e as Error).message)).toMatch(new RegExp(`custom_envs\\.a\\.env_calls.*env_calls ${calls}.*temporal\\.route_by_role is true`, 's'));
      }
    }
    expect(() => parseConfig({ ...routed, custom_envs: { a: { env_type: 'arithmetic', env_calls: 'auto' } } }, 't', '/work')).not.toThrow();
  });
});
