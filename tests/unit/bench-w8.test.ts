// W8's pieces that need no Temporal: the DES over measured times (by hand), reading a trajectory's activity
// times from history events, action kinds, distributions, and the run config it makes.
import { defaultPayloadConverter } from '@temporalio/common';
import { msNumberToTs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/configs';
import { envAsyncMakespan, lockstepMakespan, type TrajectoryTimes } from '../../src/bench/des/w8-measured';
import { parseLiveOptions } from '../../src/bench/live';
import { distribution, executions } from '../../src/bench/live/history-times';
import { actionKind, trajectoryTimes, w8RunConfig } from '../../src/bench/live/w8-bench';

const table: TrajectoryTimes[] = [
  { reset_s: 0.1, turns: [{ gen_s: 1, env_s: 2 }, { gen_s: 1, env_s: 0.5 }], finish_s: 0.1 },
  { reset_s: 0.3, turns: [{ gen_s: 2, env_s: 0.5 }, { gen_s: 0.5, env_s: 3 }, { gen_s: 1, env_s: 1 }], finish_s: 0.2 },
];

describe('W8 DES over measured times', () => {
  it('env_async: the longest trajectory; lockstep: the slowest of each barrier, then the next', () => {
    expect(envAsyncMakespan(table)).toBeCloseTo(0.3 + 2 + 0.5 + 0.5 + 3 + 1 + 1 + 0.2, 9); // 8.5
    // resets 0.3; turn 0: gen 2 + env 2; turn 1: gen 1 + env 3; turn 2 (only the second): 1 + 1; writes 0.2
    expect(lockstepMakespan(table)).toBeCloseTo(0.3 + 4 + 4 + 2 + 0.2, 9);
    expect(envAsyncMakespan([])).toBe(0);
  });
});

/** A history: each activity scheduled, started at `at` and completed `seconds` later (ms clock from 0). */
function history(calls: { type: string; at: number; seconds: number; input?: unknown }[]): temporal.api.history.v1.IHistoryEvent[] {
  const time = (ms: number) => msNumberToTs(ms);
  const events: Record<string, unknown>[] = [];
  let id = 1;
  for (const c of calls) {
    const scheduled = id++;
    events.push({ eventId: scheduled, activityTaskScheduledEventAttributes: { activityType: { name: c.type }, input: { payloads: [defaultPayloadConverter.toPayload(c.input ?? {})] } } });
    events.push({ eventId: id++, eventTime: time(c.at), activityTaskStartedEventAttributes: { scheduledEventId: scheduled } });
    events.push({ eventId: id++, eventTime: time(c.at + c.seconds * 1000), activityTaskCompletedEventAttributes: { scheduledEventId: scheduled } });
  }
  return events as temporal.api.history.v1.IHistoryEvent[]; // event ids as numbers: what executions() reads of them
}

describe('W8 history reading', () => {
  it('reads each activity\'s execution time and input, in order, and lays them out as a DES row', () => {
    const execs = executions(history([
      { type: 'envReset', at: 0, seconds: 0.2 },
      { type: 'generateTurn', at: 300, seconds: 1 },
      { type: 'envStep', at: 1400, seconds: 0.5, input: { action: 'x <bash>ls</bash>' } },
      { type: 'generateTurn', at: 2000, seconds: 1.5 },
      { type: 'envStep', at: 3600, seconds: 2, input: { action: '<submit/>' } },
      { type: 'finishTrajectory', at: 5700, seconds: 0.1 },
    ]));
    expect(execs.map((x) => x.type)).toEqual(['envReset', 'generateTurn', 'envStep', 'generateTurn', 'envStep', 'finishTrajectory']);
    expect(execs[2]!.input).toEqual({ action: 'x <bash>ls</bash>' });
    expect(trajectoryTimes(execs)).toEqual({ reset_s: 0.2, turns: [{ gen_s: 1, env_s: 0.5 }, { gen_s: 1.5, env_s: 2 }], finish_s: 0.1 });
  });

  it('names each action by its tag; none or two is invalid', () => {
    expect(['<bash>ls</bash>', '<view>a.py</view>', '<replace path="a"><old>x</old><new>y</new></replace>', '<submit/>', 'hmm <bash>ls', '<view>a</view><submit/>', ''].map(actionKind))
      .toEqual(['bash', 'view', 'replace', 'submit', 'bash', 'invalid', 'invalid']);
  });

  it('names a tool call by its tool (edit as replace); a malformed call, two calls or an unknown tool is invalid', () => {
    const call = (name: string, args: unknown) => `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
    expect([call('bash', { command: 'ls' }), `Next.\n${call('view', { path: 'a.py' })}`, call('edit', { path: 'a', old_str: 'x', new_str: 'y' }), call('submit', {})].map(actionKind))
      .toEqual(['bash', 'view', 'replace', 'submit']);
    expect([call('run_shell', { command: 'ls' }), call('bash', []), '<tool_call>\n{"name": "bash", "arguments": {"command": "x"}\n</tool_call>',
      '<tool_call>\n{"name": "bash", "arguments": {}}', call('submit', {}) + call('submit', {}), `<tool_call>${call('submit', {})}`].map(actionKind))
      .toEqual(['invalid', 'invalid', 'invalid', 'invalid', 'invalid', 'invalid']);
  });

  it('summarises a distribution', () => {
    expect(distribution([3, 1, 2, 4])).toEqual({ n: 4, median_s: 3, p90_s: 4, p99_s: 4, max_s: 4 });
    expect(distribution([5], '')).toEqual({ n: 1, median: 5, p90: 5, p99: 5, max: 5 });
    expect(distribution([])).toEqual({ n: 0, median_s: null, p90_s: null, p99_s: null, max_s: null });
  });
});

describe('W8 run config', () => {
  it('is a valid run config: SWE-lite episodes with the scripted policy, B = groups × group_size, env calls as activities', () => {
    const o = parseLiveOptions('w8', { groups: 3, group_size: 2, tiers: [1] });
    const { config } = parseConfig(w8RunConfig(o, 'lockstep', '/tmp/runs', '/tmp/sandboxes'), 'w8', '/work');
    expect(config.rollout_mode).toBe('lockstep');
    expect(config.custom_envs.swe).toMatchObject({ env_type: 'swe_lite', env_calls: 'activity', env_config: { tiers: [1], max_turns: 12 } });
    expect(config.train_env_manager).toMatchObject({ num_env_groups: 3, group_size: 2 });
    expect(config.engines.inference[0]!.options).toMatchObject({ sim: { policy: { kind: 'swe_oracle', solve_prob: 0.5 } } });
    expect(config.engines.env.options).toMatchObject({ sandbox_root: '/tmp/sandboxes' });
    expect(config.custom_envs.swe!.env_config).toMatchObject({ actions: 'xml' });
  });

  it('passes actions to the env config; an unknown protocol is refused naming the key', () => {
    const o = parseLiveOptions('w8', { actions: 'tool_calls' });
    const { config } = parseConfig(w8RunConfig(o, 'env_async', '/tmp/runs', '/tmp/sandboxes'), 'w8', '/work');
    expect(config.custom_envs.swe!.env_config).toMatchObject({ actions: 'tool_calls' });
    expect(() => parseLiveOptions('w8', { actions: 'json' })).toThrow('w8.actions');
  });
});
