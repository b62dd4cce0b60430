// The llm_judge reward end to end: a real dev server, sim policy engines, and a real torch inference server as the
// judge (tiny:default+warm:add, built from code: it answers "a+b=" prompts with an integer, often wrong). The judge
// is asked each row's prompt as it is and must answer one digit (grade_pattern ^\s*(\d)\s*$, grades 0..9): a
// one-digit reply is a grade, a two-digit one is unreadable. The test first asks the judge each row itself, at
// temperature 0, so it knows which rows are graded and which are not; then the run must train only samples of
// graded rows, with reward grade / 9, and count the others' samples as unscored (never a 0, never trained),
// apart from infrastructure failures.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { batchDir, METRIC, runDataDir } from '../../src/core';
import type { RunStatus } from '../../src/workflows/run';
import { readJsonl, ROOT } from './helpers/dev-server';
import { scrape } from './helpers/prometheus';
import { TestEngine } from './helpers/engine';
import { upSimStack, type SimStack } from './helpers/sim-stack';

const PROMPTS = ['2+3=', '7+8=', '1+1=', '9+9=', '4+0=', '6+6='];
const ONE_DIGIT = /^\s*(\d)\s*$/;
const G = 2;
const STEPS = 3;
let judge: TestEngine;
let stack: SimStack;
/** What the judge answers each prompt, asked directly. */
const replies = new Map<string, string>();

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  judge = await TestEngine.start('inference', ['--backend', 'torch', '--option', 'model=tiny:default+warm:add', '--option', 'torch_threads=1']);
  for (const prompt of PROMPTS) {
    const r = await fetch(`${judge.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: prompt }], max_tokens: 6, temperature: 0, seed: 0 }),
    });
    replies.set(prompt, ((await r.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content);
  }
  const graded = PROMPTS.filter((p) => ONE_DIGIT.test(replies.get(p)!));
  // Both kinds are needed for the test to mean anything; if the model ever answers otherwise, change PROMPTS.
  expect(graded.length, JSON.stringify([...replies])).toBeGreaterThan(0);
  expect(graded.length, JSON.stringify([...replies])).toBeLessThan(PROMPTS.length);

  const rows = path.join(mkdtempSync(path.join(tmpdir(), 'rollflow-llm-judge-')), 'rows.jsonl');
  writeFileSync(rows, PROMPTS.map((prompt) => JSON.stringify({ prompt, answer: '', domain: 'chat' })).join('\n') + '\n');
  stack = await upSimStack(
    'llm-judge-test',
    `
exp_name: llm-judge-test
rollout_batch_size: 2
num_return_sequences_in_group: ${G}
async_generation_ratio: 1
max_failed_group_ratio: 1   # the unscored groups fail; the run goes on
custom_envs:
  chat:
    env_type: dataset
    max_steps: 1
    max_tokens_per_step: 8
    env_config:
      path: ${rows}
      verifier: llm_judge
      verifier_config: { url: "${judge.url}", template: "{prompt}", grade_pattern: '${ONE_DIGIT.source}', min_grade: 0, max_grade: 9, attempts: 2, max_tokens: 6 }
`,
  );
});

afterAll(async () => {
  await stack?.down();
  judge?.stop();
});


it('graded samples are trained with grade / 9; unreadable grades fail their groups, counted as unscored, never trained', async () => {
  const r = stack.rollflow('run', stack.config, '--wait', '--run-id', 'judged', '--set', `max_steps=${STEPS}`);
  expect(r.status, r.stderr).toBe(0);
  const final = (await stack.client.workflow.getHandle('judged').result()) as RunStatus;
  expect(final.step).toBe(STEPS);
  const { totals } = final;
  expect(totals.infraFailedGroups).toBe(0);
  expect(totals.failedGroups).toBeGreaterThan(0);
  expect(totals.unscoredSamples).toBe(totals.failedGroups * G); // every failure was an unscored response

  // Trained rewards are the judge's grades of graded rows; nothing unscored reached a batch as a 0 or otherwise.
  const gradedRewards = new Set(PROMPTS.flatMap((p) => (ONE_DIGIT.exec(replies.get(p)!) ? [Number(ONE_DIGIT.exec(replies.get(p)!)![1]) / 9] : [])));
  const dir = path.join(stack.server.stateDir, 'run', 'samples', batchDir('judged'));
  const trained = readdirSync(dir).flatMap((f) => readJsonl<{ reward: number }>(path.join(dir, f)));
  expect(trained).toHaveLength(STEPS * 2 * G);
  for (const s of trained) expect(gradedRewards).toContain(s.reward);

  const records = readJsonl<Record<string, number>>(path.join(runDataDir(path.join(stack.server.stateDir, 'run'), 'judged'), 'metrics.jsonl'));
  const unscoredInRecords = records.reduce((n, rec) => n + rec[METRIC.rewardUnscored]!, 0);
  expect(unscoredInRecords).toBeGreaterThan(0);
  expect(unscoredInRecords).toBeLessThanOrEqual(totals.unscoredSamples); // the last ones may come after the last batch

  const envUrl = (parse(readFileSync(stack.config, 'utf8')) as { engines: { env: { url: string } } }).engines.env.url;
  const m = await scrape(envUrl);
  expect(m.get('rollflow_env_reward_unscored_total{domain="chat",verifier="llm_judge"}')).toBeGreaterThanOrEqual(totals.failedGroups);
  expect(m.get('rollflow_env_rewards_total{domain="chat",verifier="llm_judge"}')).toBeGreaterThanOrEqual(trained.length);
  expect(m.get('rollflow_env_reward_infra_errors_total{domain="chat",verifier="llm_judge"}') ?? 0).toBe(0);
});
