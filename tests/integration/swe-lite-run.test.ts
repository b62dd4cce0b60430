// SWE-lite episodes inside a real run (real dev server, sim engines, started by the CLI): two steps of
// examples/swe-lite-sim.yaml. Sim replies are random bytes, so every action is invalid and every
// episode is graded by the hidden tests in the sandbox when its 4 turns run out. Checked on what the
// env server counted: each episode started, stepped 4 times, ended unsolved and was closed; and on
// the run: every step trained, no group failed.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { RunStatus } from '../../src/workflows/run';
import { ROOT } from './helpers/dev-server';
import { upSimStack, type SimStack } from './helpers/sim-stack';

let stack: SimStack;

beforeAll(async () => {
  const example = parse(readFileSync(path.join(ROOT, 'examples/swe-lite-sim.yaml'), 'utf8')) as { engines?: unknown };
  delete example.engines; // the stack puts sim engines on free ports
  stack = await upSimStack('swe-lite-test', stringify(example));
});

afterAll(async () => {
  await stack?.down();
});

/** `name{labels} value` lines of a Prometheus text page, as "name{labels}" -> value. */
function series(text: string): Map<string, number> {
  return new Map(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]));
}

it('every episode runs its 4 turns in the sandbox, is graded and closed; the run trains both steps', async () => {
  const r = stack.rollflow('run', stack.config, '--wait', '--run-id', 'swe');
  expect(r.status, r.stderr).toBe(0);
  const final = (await stack.client.workflow.getHandle('swe').result()) as RunStatus;
  expect([final.step, final.totals.failedGroups, final.totals.infraFailedGroups]).toEqual([2, 0, 0]);

  const envUrl = (parse(readFileSync(stack.config, 'utf8')) as { engines: { env: { url: string } } }).engines.env.url;
  const m = series(await (await fetch(`${envUrl}/metrics`)).text());
  const episodes = m.get('rollflow_env_resets_total{env="swe_lite"}') ?? 0;
  expect(episodes).toBeGreaterThanOrEqual(2 * 4); // B = 4 a step; more when generation ran ahead
  expect(m.get('rollflow_env_steps_total{env="swe_lite"}')).toBe(4 * episodes);
  expect(m.get('rollflow_env_invalid_actions_total{env="swe_lite"}')).toBe(4 * episodes);
  expect(m.get('rollflow_env_episodes_done_total{env="swe_lite",success="false"}')).toBe(episodes);
  expect(m.get('rollflow_env_sessions_open{env="swe_lite"}')).toBe(0);
});
