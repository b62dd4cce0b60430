// Property: every invalid config generated from the schema (a value its key
// rejects, an unknown key at any level, a required key missing, a broken
// reference between keys) fails on the path `rollflow validate` and `run`
// take (a YAML file through loadConfig, then the pre-flight check) with a
// ConfigError naming the key's path; never another exception. Seeded, so a
// failure reproduces. The CLI itself is tested on a sample in
// tests/integration/cli-invalid-configs.test.ts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, loadConfig, type ConfigProblem } from '../../src/configs';
import { checkConfig } from '../../src/client/preflight';
import { BASE_CONFIG, configWith, FULL_CONFIG, invalidConfig, reports, twoBrokenKeys } from '../helpers/invalid-configs';

const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-invalid-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What `rollflow validate <file>` does before printing, returning the problems it would print. */
function validateFile(raw: Record<string, unknown>): ConfigProblem[] {
  const file = path.join(dir, 'config.yaml');
  writeFileSync(file, stringify(raw));
  try {
    checkConfig(loadConfig(file, [], dir), { run: true });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    expect(e.message).not.toMatch(/^\s+at /m);
    expect(e.message.split('\n')[0]).toBe(`invalid config ${file}:`);
    return e.problems;
  }
  return [];
}

describe('invalid configs generated from the schema', () => {
  it('start from a config that is valid and runnable, with every default filled in', () => {
    expect(validateFile(BASE_CONFIG)).toEqual([]); // this one runs the python-engines check too
    expect(validateFile(FULL_CONFIG)).toEqual([]);
  });

  it('each fail with a ConfigError naming the broken key', () => {
    fc.assert(
      fc.property(invalidConfig, (b) => {
        const problems = validateFile(configWith(b));
        expect(problems.map((p) => p.path).filter((p) => reports(p, b)), `${b.what}: got ${JSON.stringify(problems)}`).not.toEqual([]);
      }),
      { seed: 20260412, numRuns: 400 },
    );
  });

  it('include what the property found before: a launched engine\'s url that is no URL at all (was a TypeError "Invalid URL", exit 1)', () => {
    expect(validateFile({ ...BASE_CONFIG, engines: { env: { url: '|' } } }).map((p) => p.path)).toEqual(['engines.env.url']);
  });

  it('reject a metrics address whose port no socket can have (was accepted, then the worker warned "address taken")', () => {
    const withAddress = (metrics_address: string) => validateFile({ ...BASE_CONFIG, temporal: { worker: { metrics_address } } });
    expect(withAddress('127.0.0.1:70000')).toEqual([{ path: 'temporal.worker.metrics_address', given: '127.0.0.1:70000', expected: 'expected a value matching host:port, port 1-65535' }]);
    expect(withAddress('0.0.0.0:0').map((p) => p.path)).toEqual(['temporal.worker.metrics_address']);
    expect(withAddress('0.0.0.0:65535')).toEqual([]);
  });

  it('say once what each alternative of a key expects, and where inside a list it failed (track_with)', () => {
    expect(validateFile({ ...BASE_CONFIG, track_with: 'mlflow' })).toEqual([{ path: 'track_with', given: 'mlflow', expected: 'expected one of "tensorboard", "wandb", "stdout", or array' }]);
    expect(validateFile({ ...BASE_CONFIG, track_with: ['wandb', 'mlflow'] })).toEqual([
      { path: 'track_with', given: ['wandb', 'mlflow'], expected: 'expected one of "tensorboard", "wandb", "stdout", or one of "tensorboard", "wandb", "stdout" at [1]' },
    ]);
    expect(validateFile({ ...BASE_CONFIG, tracker_kwargs: { dir: 'x' } }).map((p) => p.path)).toEqual(['tracker_kwargs.dir']);
  });

  it('report every broken key at once', () => {
    fc.assert(
      fc.property(twoBrokenKeys, ([a, b]) => {
        const paths = validateFile(configWith(a, b)).map((p) => p.path);
        for (const broken of [a, b]) expect(paths.some((p) => reports(p, broken)), `${a.what} + ${b.what}: got ${paths.join(', ')}`).toBe(true);
      }),
      { seed: 20260413, numRuns: 150 },
    );
  });
});
