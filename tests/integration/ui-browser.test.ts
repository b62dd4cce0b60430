/**
 * The Temporal UI shows rollouts, proven in a real browser: Debian's Chromium
 * (installed by `make setup`) driven by playwright-core opens the UI of the
 * dev server `rollflow dev up` started, filters the workflow list by
 * RollflowRunId, opens a trajectory and reads its prompt, its response and
 * its reward in the trajectory's Current Details, rendered from the
 * workflow's own state. The expected texts come from the trajectory's event
 * history (what the env and the engine returned), not from the code that
 * renders them.
 *
 * The stack has a codec server (temporal.codec_url), which the UI calls to
 * show payloads: the trajectory's result gains the transcript its sample-store
 * key refers to.
 *
 * The run: one SWE-lite step on the scripted policy (real text, multi-turn,
 * sandboxed commands), so the transcript has several turns.
 * Screenshots: .state/test-reports/browser/ (each page on success; the page
 * at the failure on failure).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TrajectorySummary } from '../../src/workflows/trajectory';
import { freePort, ROOT, until } from './helpers/dev-server';
import { upSimStack, type SimStack } from './helpers/sim-stack';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = path.join(ROOT, '.state/test-reports/browser');
const RUN = 'ui-run';
const TRAJECTORY = `${RUN}/e0-p0/s1`;

let stack: SimStack;
let browser: Browser;
let codecPort: number;

beforeAll(async () => {
  stack = await upSimStack(
    'ui-browser',
    `
exp_name: ui
max_steps: 1
rollout_batch_size: 1
num_return_sequences_in_group: 2
dataset_size: 60
custom_envs:
  swe: { env_type: swe_lite, max_steps: 6, max_tokens_per_step: 512, env_calls: activity, env_config: { max_turns: 6 } }
train_env_manager: { num_env_groups: 1, group_size: 2, tags: [swe] }
`,
    { sim: { c0: 0.001, policy: { kind: 'swe_oracle', solve_prob: 1.0, solve_after_turns: 2, flail_turns: 2 } } },
    `codec_url: "http://127.0.0.1:${codecPort = await freePort()}"`,
  );
  // Set-up installs Chromium from Debian (Makefile system-packages); a machine without it fails here, by name.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await stack?.down();
});

/** What the trajectory's history says the env showed first, the model answered first, and the episode earned. */
async function groundTruth(): Promise<{ prompt: string; response: string; reward: number }> {
  const handle = stack.client.workflow.getHandle(TRAJECTORY);
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = new Map<string, string>(); // scheduled event id -> activity type
  const results: Record<string, unknown[]> = {};
  for (const e of events as temporal.api.history.v1.IHistoryEvent[]) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s) scheduled.set(String(e.eventId), s.activityType!.name!);
    const c = e.activityTaskCompletedEventAttributes;
    if (c) (results[scheduled.get(String(c.scheduledEventId))!] ??= []).push(defaultPayloadConverter.fromPayload(c.result!.payloads![0]!));
    // A local activity (the reset, under env_calls auto): its marker holds its type (in `data`) and its result.
    const m = e.markerRecordedEventAttributes;
    if (m?.markerName === 'core_local_activity' && m.details?.result?.payloads?.[0]) {
      const { activity_type } = defaultPayloadConverter.fromPayload<{ activity_type: string }>(m.details.data!.payloads![0]!);
      (results[activity_type] ??= []).push(defaultPayloadConverter.fromPayload(m.details.result.payloads[0]));
    }
  }
  const reset = results.envReset![0] as { observation: string };
  // The first turn's generation: its own activity, or the first half of a turn activity (env_calls auto).
  const firstTurn = (results.generateTurn?.[0] ?? (results.playTurn![0] as { turn: unknown }).turn) as { action: string };
  const { reward } = (await handle.result()) as TrajectorySummary;
  return { prompt: reset.observation, response: firstTurn.action, reward };
}

/** The text of the page and of its frames (the UI renders markdown details in a sandboxed iframe). */
async function pageText(page: Page): Promise<string> {
  // (The function runs in the browser; it names `document` through globalThis, which the Node typings know.)
  const texts = await Promise.all(page.frames().map((f) => f.evaluate(() => (globalThis as unknown as { document: { body?: { innerText: string } } }).document.body?.innerText ?? '').catch(() => '')));
  return texts.join('\n');
}

/** Waits until the page shows `text` (the UI loads lists and queries after the page itself). */
async function shows(page: Page, text: string): Promise<void> {
  await until(async () => ((await pageText(page)).includes(text) ? true : undefined), `the UI showing ${JSON.stringify(text)}`, 60_000);
}

describe('the Temporal UI shows a rollout (Chromium)', () => {
  it('filters by RollflowRunId, opens a trajectory and reads its prompt, response and reward', async () => {
    const r = stack.rollflow('run', stack.config, '--wait', '--run-id', RUN);
    expect(r.status, r.stderr).toBe(0);
    const truth = await groundTruth();
    expect(truth.reward).toBe(1); // the scripted policy solves every task here
    const promptLine = truth.prompt.split('\n')[0]!;
    const responseLine = truth.response.split('\n')[0]!;
    expect(promptLine.length).toBeGreaterThan(10);
    expect(responseLine.length).toBeGreaterThan(5);

    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const ui = `http://127.0.0.1:${stack.server.uiPort}`;
    try {
      // The list, filtered to this run by its search attribute: the run, its group, its train step and two trajectories.
      await page.goto(`${ui}/namespaces/default/workflows?query=${encodeURIComponent(`RollflowRunId="${RUN}"`)}`);
      await shows(page, TRAJECTORY);
      await shows(page, '5 Completed');
      await page.screenshot({ path: path.join(SHOTS, 'list.png'), fullPage: true });

      // Open the trajectory from the list. Its result names only a sample-store key; the codec server adds the
      // transcript behind it for display (the claim check resolved), with a link to the full text.
      await page.getByRole('link', { name: TRAJECTORY, exact: true }).click();
      await shows(page, '"transcript"');
      await shows(page, `http://127.0.0.1:${codecPort}/text/${RUN}/trajectories/e0-p0-s1.json`);
      await page.screenshot({ path: path.join(SHOTS, 'trajectory-result.png'), fullPage: true });
      const full = await fetch(`http://127.0.0.1:${codecPort}/text/${RUN}/trajectories/e0-p0-s1.json`);
      expect(await full.text()).toContain(truth.response);

      // Its User Metadata tab: the transcript the workflow keeps, rendered.
      await page.getByTestId('user-metadata-tab').click();
      await shows(page, 'Current Details');
      await shows(page, `e0-p0-s1 · swe_lite · reward ${truth.reward}`);
      await shows(page, promptLine);
      await shows(page, responseLine);
      await page.screenshot({ path: path.join(SHOTS, 'trajectory.png'), fullPage: true });

      // The run itself shows its progress table.
      await page.goto(`${ui}/namespaces/default/workflows/${encodeURIComponent(RUN)}`);
      await page.getByTestId('user-metadata-tab').click();
      await shows(page, 'validation reward'); // a header cell of the rendered table
      await shows(page, '1 of 1');
      await page.screenshot({ path: path.join(SHOTS, 'run.png'), fullPage: true });
    } catch (e) {
      await page.screenshot({ path: path.join(SHOTS, 'failure.png'), fullPage: true }).catch(() => undefined);
      throw e;
    } finally {
      await page.close();
    }
  });
});
