// The code-RLVR example end to end on a real dev server with sim engines, started by the CLI:
// two steps of examples/code-rlvr.yaml. Sim replies are not code, so the rewards are 0; what is
// checked is where they came from: the env server's /metrics count every reply as scored by
// code_exec in the sandbox (none failed as the server's, none as a verifier error), and no group
// failed, for infrastructure or any other reason.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { RunStatus } from '../../src/workflows/run';
import { ROOT } from './helpers/dev-server';
import { scrape } from './helpers/prometheus';
import { upSimStack, type SimStack } from './helpers/sim-stack';

let stack: SimStack;

interface Example {
  custom_envs: { code: { env_config: { path: string } } };
  engines?: unknown;
}

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  const example = parse(readFileSync(path.join(ROOT, 'examples/code-rlvr.yaml'), 'utf8')) as Example;
  delete example.engines; // the stack puts sim engines on free ports
  example.custom_envs.code.env_config.path = path.join(ROOT, example.custom_envs.code.env_config.path);
  stack = await upSimStack('code-rlvr-test', stringify(example));
});

afterAll(async () => {
  await stack?.down();
});


describe('code RLVR example', () => {
  it('two steps: every reply is scored by code_exec in the sandbox, nothing fails', async () => {
    const r = stack.rollflow('run', stack.config, '--wait', '--run-id', 'code', '--set', 'max_steps=2');
    expect(r.status, r.stderr).toBe(0);
    const final = (await stack.client.workflow.getHandle('code').result()) as RunStatus;
    expect([final.step, final.totals.failedGroups]).toEqual([2, 0]);

    const envUrl = (parse(readFileSync(stack.config, 'utf8')) as { engines: { env: { url: string } } }).engines.env.url;
    const metrics = await scrape(envUrl);
    const scored = metrics.get('rollflow_env_rewards_total{domain="code",verifier="code_exec"}') ?? 0;
    expect(scored).toBeGreaterThanOrEqual(2 * 16); // B = 16 replies per step, more when generation ran ahead
    expect(metrics.get('rollflow_env_reward_seconds_count{verifier="code_exec"}')).toBe(scored);
    const failures = [...metrics].filter(([k, v]) => /^rollflow_env_reward_(infra_errors|errors|timeouts)_total/.test(k) && v > 0);
    expect(failures).toEqual([]);
  });
});
