import { describe, expect, it } from 'vitest';
import { DesNoProgressError, desW2, desW2Grid, groupOutcome, redundantRolloutSchedule, trajectoryOutcome, type Outcome } from '../../src/bench/des';

const ok = (seconds: number): Outcome => ({ seconds, failed: false });
const fail = (seconds: number): Outcome => ({ seconds, failed: true });
const table = (outcomes: Outcome[]) => (n: number) => outcomes[n] ?? ok(1000);

describe('trajectory and group outcomes', () => {
  it('a fail-stop step holds its trajectory for the timeout, then fails it', () => {
    // llm 0.5 per turn: 0.5 + 1, then 0.5 into the fail-stop step, + timeout 10 = 12.
    expect(trajectoryOutcome([0.5, 0.5, 0.5], [1, Infinity, 2], 10)).toEqual(fail(12));
    expect(trajectoryOutcome([0, 0, 0], [1, 2, 3], 10)).toEqual(ok(6));
  });

  it('a group completes with its last member and fails with its first failing member', () => {
    expect(groupOutcome([ok(5), ok(7), ok(6)])).toEqual(ok(7));
    expect(groupOutcome([ok(5), fail(11), fail(7)])).toEqual(fail(7));
  });
});

describe('redundant rollout schedule', () => {
  it('stops at the first complete groups that hold the batch', () => {
    // 2 slots, 1 trajectory needed: group 1 (3 s) completes first.
    expect(redundantRolloutSchedule({ slots: 2, groupSize: 1, neededTrajectories: 1 }, table([ok(10), ok(3)])).makespan_s).toBe(3);
    // 2 needed: both groups.
    expect(redundantRolloutSchedule({ slots: 2, groupSize: 1, neededTrajectories: 2 }, table([ok(10), ok(3)])).makespan_s).toBe(10);
  });

  it('a failed group hands its slot to the next dispatched group', () => {
    // 1 slot: group 0 fails at 4, group 1 starts at 4 and takes 5: 9.
    const s = redundantRolloutSchedule({ slots: 1, groupSize: 1, neededTrajectories: 1 }, table([fail(4), ok(5)]));
    expect(s).toEqual({ makespan_s: 9, groups_needed: 1, groups_started: 2, groups_failed: 1, groups_running_at_end: 0 });
  });

  it('counts whole groups: 10 trajectories in groups of 4 need 3 groups', () => {
    const s = redundantRolloutSchedule({ slots: 4, groupSize: 4, neededTrajectories: 10 }, table([ok(4), ok(1), ok(3), ok(2)]));
    expect(s.groups_needed).toBe(3);
    expect(s.makespan_s).toBe(3);
    expect(s.groups_running_at_end).toBe(1);
  });

  it('refuses a plan whose groups cannot hold the batch, and stops when no group ever completes', () => {
    expect(() => redundantRolloutSchedule({ slots: 2, groupSize: 4, neededTrajectories: 9 }, table([]))).toThrow(RangeError);
    expect(() => redundantRolloutSchedule({ slots: 2, groupSize: 1, neededTrajectories: 1, maxGroupStarts: 10 }, () => fail(1))).toThrow(DesNoProgressError);
  });
});

describe('W2 DES', () => {
  it('without failures or variance, exact and redundant rollouts take T·μ', () => {
    const r = desW2({ turns: 4, mean_s: 2, std_s: 0, p_slow: 0, p_stop: 0 });
    expect(r.modes.exact!.makespan_s).toBe(8);
    expect(r.modes.redundant!.makespan_s).toBe(8);
    expect(r.speedup).toBe(1);
  });

  it('every env fail-stopping is reported, not looped on', () => {
    expect(() => desW2({ p_stop: 1 })).toThrow(DesNoProgressError);
  });

  it('redundant groups absorb fail-slow and fail-stop envs (default seed)', () => {
    const r = desW2();
    expect(r.modes.exact!.groups_needed).toBe(32);
    expect(r.modes.redundant!.groups_needed).toBe(22); // ⌈256 / 12⌉
    expect(r.speedup).toBeGreaterThan(1);
  });

  it('the heatmap grid has one cell per (num_env_groups, group_size), each against the same baseline', () => {
    const grid = desW2Grid({ turns: 5 });
    expect(grid).toHaveLength(25);
    expect(new Set(grid.map((c) => c.modes.exact!.makespan_s)).size).toBe(1);
  });
});
