// The chaos invariant checker on hand-made records: a clean run passes, and
// each fault it exists to catch (a repeated or skipped step, a duplicated
// uid, a vanished group, a wrong version, staleness over the bound) fails it.
import { describe, expect, it } from 'vitest';
import { checkRun, type RunRecords } from '../../src/chaos';
import type { Expectations, GroupExecution } from '../../src/chaos/invariants';
import { groupUid, sampleUid } from '../../src/core';

const G = 2;
const e: Expectations = { maxSteps: 3, samplesPerStep: 2 * G, groupSize: G, maxStaleness: 1, stalePolicy: 'drop' };

const group = (position: number, over: Partial<GroupExecution> = {}): GroupExecution => {
  const uid = groupUid({ epoch: 0, position });
  return { workflowId: `r/${uid}`, uid, status: 'COMPLETED', closedAfterRun: false, cancelRequested: false, result: { accepted: true }, ...over };
};
const uidsOf = (...positions: number[]) => positions.flatMap((p) => Array.from({ length: G }, (_, i) => sampleUid(groupUid({ epoch: 0, position: p }), i)));

/** 3 steps of 2 groups (positions 0-5), one group filtered (6), one dropped as stale (7), one cancelled at the end (8). */
function cleanRun(): RunRecords {
  return {
    runId: 'r',
    outcome: 'COMPLETED',
    final: { step: 3, version: 3, buffered: 0, running: G, totals: { dispatchedGroups: 9, filteredGroups: 1, failedGroups: 0, droppedSamples: G, restartedSamples: 0 } },
    metrics: [0, 1, 2].map((step) => ({ step, version: step + 1, wall_s: 2 * (step + 1), stalenessMax: 1 })),
    batches: [0, 1, 2].map((step) => ({ step, uids: uidsOf(2 * step, 2 * step + 1), oldestTokenVersion: Math.max(0, step - 1) })),
    groups: [
      ...[0, 1, 2, 3, 4, 5].map((p) => group(p)),
      group(6, { result: { accepted: false } }),
      group(7),
      group(8, { closedAfterRun: true, cancelRequested: true, result: { accepted: false, error: 'cancelled' } }),
    ],
  };
}

const failed = (r: RunRecords) => checkRun(r, e).checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);

describe('chaos invariants', () => {
  it('a run that kept every invariant passes, every group accounted for', () => {
    const result = checkRun(cleanRun(), e);
    expect(failed(cleanRun())).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.accounting).toEqual({ dispatched: 9, executions: 9, consumed: 6, filtered: 1, failed: 0, staleOrBuffered: 1, endedWithRun: 1, vanished: [] });
  });

  it('a repeated step fails (two metrics records and two batch files for step 1)', () => {
    const r = cleanRun();
    r.metrics.splice(2, 0, { step: 1, version: 2, wall_s: 5, stalenessMax: 0 });
    r.batches.push({ step: 1, uids: uidsOf(2, 3), oldestTokenVersion: 0 });
    expect(failed(r)).toEqual(expect.arrayContaining(['metrics records: no step repeated: repeated: step 1 ×2', 'batch files: no step repeated: repeated: step 1 ×2']));
    expect(failed(r).some((f) => f.startsWith('every consumed uid unique: consumed more than once: e0-p2-s0 ×2'))).toBe(true);
  });

  it('a skipped step fails', () => {
    const r = cleanRun();
    r.metrics = r.metrics.filter((m) => m.step !== 1);
    expect(failed(r)).toContain('metrics records: no step skipped: missing steps 1');
  });

  it('a uid consumed twice fails, even with the sample count right', () => {
    const r = cleanRun();
    r.batches[2]!.uids[0] = r.batches[0]!.uids[0]!;
    expect(failed(r)).toContain('every consumed uid unique: consumed more than once: e0-p0-s0 ×2');
  });

  it('a vanished group fails: terminated, still running, or dispatched but never seen', () => {
    const terminated = cleanRun();
    terminated.groups[7] = group(7, { status: 'TERMINATED', result: undefined });
    expect(failed(terminated)).toEqual(expect.arrayContaining(['groups: none vanished: r/e0-p7: TERMINATED']));
    const running = cleanRun();
    running.groups[8] = group(8, { status: 'RUNNING', closedAfterRun: true, result: undefined });
    expect(failed(running)).toContain('groups: none vanished: r/e0-p8: RUNNING');
    const missing = cleanRun();
    missing.groups.splice(6, 1); // the filtered group's execution is nowhere
    expect(failed(missing)).toEqual(['groups: one execution per dispatch: 8 seen, 9 by the run totals (dispatchedGroups)', 'groups: filtered: 0 seen, 1 by the run totals (filteredGroups)']);
  });

  it('a group accepted but neither trained nor counted as stale or buffered fails', () => {
    const r = cleanRun();
    r.final!.totals.droppedSamples = 0;
    expect(failed(r)).toEqual(['groups: stale or left buffered: 1 seen, 0 by the run totals (dropped + restarted + buffered at the end) / G']);
  });

  it('a run that did not finish, or trained the wrong version, fails', () => {
    const r = cleanRun();
    r.outcome = 'TERMINATED';
    r.final!.version = 4;
    r.metrics[2]!.version = 4;
    expect(failed(r)).toEqual(['run completed: TERMINATED, 3 of 3 steps', 'trained version = step count: final version 4 after 3 steps, step 2 trained version 4']);
  });

  it('staleness over the bound fails unless the policy accepts stale samples', () => {
    const r = cleanRun();
    r.metrics[1]!.stalenessMax = 2;
    expect(failed(r)).toEqual(['staleness within the bound (dispatch, metrics): above 1: step 1: 2']);
    expect(checkRun(r, { ...e, stalePolicy: 'accept' }).ok).toBe(true);
  });

  it('tokens from weights older than the bound fail (a server restarted with its launch weights), though dispatch staleness is fine', () => {
    const r = cleanRun();
    r.batches[2]!.oldestTokenVersion = 0;
    expect(failed(r)).toEqual(['staleness within the bound (oldest token, batch files): above 1: step 2: 2']);
  });

  it('no final status: the group totals are unknown, so the accounting fails', () => {
    const r = cleanRun();
    delete r.final;
    r.outcome = 'FAILED: boom';
    expect(failed(r)).toEqual(['run completed: FAILED: boom', 'trained version = step count: no final status', 'every dispatched group accounted for: no final status: the run totals are unknown']);
  });
});
