// SWE-lite episodes inside a real run (real dev server, sim engines, started by the CLI): two steps of
// examples/swe-lite.yaml, whose scripted policy solves about half the episodes and flails in
// the rest. Every command runs in the bubblewrap sandbox and every episode is graded by its hidden
// tests. Checked on what the env server counted (episodes started, ended solved or not, closed, the
// flailers' invalid actions) and on the run: both steps trained, no group failed.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { METRIC, runDataDir } from '../../src/core';
import type { RunStatus } from '../../src/workflows/run';
import { readJsonl, ROOT } from './helpers/dev-server';
import { scrape } from './helpers/prometheus';
import { upSimStack, type SimStack } from './helpers/sim-stack';

let stack: SimStack;

interface Example {
  engines?: { inference: { options: Record<string, unknown> }[] };
}

beforeAll(async () => {
  const example = parse(readFileSync(path.join(ROOT, 'examples/swe-lite.yaml'), 'utf8')) as Example;
  const inferenceOptions = example.engines!.inference[0]!.options; // the scripted policy
  delete example.engines; // the stack puts sim engines on free ports
  stack = await upSimStack('swe-lite-test', stringify(example), inferenceOptions);
});

afterAll(async () => {
  await stack?.down();
});


it('scripted episodes run in the sandbox and are graded: some solved, some not, all closed; the run trains both steps', async () => {
  const r = stack.rollflow('run', stack.config, '--wait', '--run-id', 'swe');
  expect(r.status, r.stderr).toBe(0);
  const final = (await stack.client.workflow.getHandle('swe').result()) as RunStatus;
  expect([final.step, final.totals.failedGroups, final.totals.infraFailedGroups]).toEqual([2, 0, 0]);

  const envUrl = (parse(readFileSync(stack.config, 'utf8')) as { engines: { env: { url: string } } }).engines.env.url;
  const m = await scrape(envUrl);
  const episodes = m.get('rollflow_env_resets_total{env="swe_lite"}') ?? 0;
  const solved = m.get('rollflow_env_episodes_done_total{env="swe_lite",success="true"}') ?? 0;
  const unsolved = m.get('rollflow_env_episodes_done_total{env="swe_lite",success="false"}') ?? 0;
  expect(episodes).toBeGreaterThanOrEqual(2 * 8); // B = 8 a step; more when generation ran ahead
  expect(solved + unsolved).toBe(episodes); // every episode ended (submitted or out of turns) and was graded
  expect(solved).toBeGreaterThan(0);
  expect(unsolved).toBeGreaterThan(0);
  expect(m.get('rollflow_env_invalid_actions_total{env="swe_lite"}')).toBeGreaterThan(0); // the flailers' unreadable replies
  expect(m.get('rollflow_env_sessions_open{env="swe_lite"}')).toBe(0);

  // The episodes' env info reaches the step records: turns, share of hidden tests passed, success (= the reward here).
  const records = readJsonl<Record<string, number>>(path.join(runDataDir(path.join(stack.server.stateDir, 'run'), 'swe'), 'metrics.jsonl'));
  expect(records).toHaveLength(2);
  for (const r of records) {
    expect(r['env/turn']).toBeGreaterThan(1);
    expect(r['env/tests_passed_fraction']).toBeGreaterThan(0);
    expect(r['env/success']).toBeCloseTo(r[METRIC.rewardMean]!, 9);
  }
});
