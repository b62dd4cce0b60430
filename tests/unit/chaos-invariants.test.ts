// The chaos invariant checker on hand-made records: a clean run passes, and
// each fault it exists to catch fails it, each check read from a record the
// fault could falsify (the trainer, Temporal and env cases are in
// chaos-trainer-invariants.test.ts).
import { describe, expect, it } from 'vitest';
import { checkRun, type RunRecords } from '../../src/chaos';
import { cleanRun, e, group, uidsOf } from './helpers/chaos-records';

const failed = (r: RunRecords) => checkRun(r, e).checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);

describe('chaos invariants', () => {
  it('a run that kept every invariant passes, every group accounted for', () => {
    const result = checkRun(cleanRun(), e);
    expect(failed(cleanRun())).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.accounting).toEqual({ dispatched: 9, executions: 9, consumed: 6, filtered: 1, failed: 0, staleOrBuffered: 1, endedWithRun: 1, vanished: [] });
    expect(result.checks.find((c) => c.name.startsWith('env:'))?.detail).toMatch(/^not checked/);
  });

  it('a metrics line written twice fails (the raw lines, nothing deduplicated), and so does a skipped one', () => {
    const r = cleanRun();
    r.metrics.splice(2, 0, { step: 1, version: 2, wall_s: 5 });
    expect(failed(r)).toEqual(['metrics.jsonl: one line per step (the idempotent write): step 1 ×2']);
    const skipped = cleanRun();
    skipped.metrics = skipped.metrics.filter((m) => m.step !== 1);
    expect(failed(skipped)).toEqual(['metrics.jsonl: one line per step (the idempotent write): missing steps 1']);
  });

  it('the store: a missing or unreadable batch file fails, and so does a file past max_steps', () => {
    const missing = cleanRun();
    missing.batches.splice(1, 1);
    expect(failed(missing)).toEqual(expect.arrayContaining(['store: one readable batch file per step: missing steps 1']));
    const torn = cleanRun();
    torn.batches[2] = { step: 2, uids: [], oldestTokenVersion: [], unreadable: '1 lines not JSON' };
    expect(failed(torn)).toEqual(expect.arrayContaining(['store: one readable batch file per step: step 2: 1 lines not JSON']));
    const extra = cleanRun();
    extra.batches.push({ step: 3, uids: uidsOf(6), oldestTokenVersion: [2, 2] });
    expect(failed(extra)).toEqual(expect.arrayContaining(['store: one readable batch file per step: step 3 past max_steps']));
  });

  it('a uid trained in two batch files fails, even with the sample count right', () => {
    const r = cleanRun();
    r.batches[2]!.uids[0] = r.batches[0]!.uids[0]!;
    expect(failed(r)).toEqual(expect.arrayContaining(['store: no sample uid trained twice across batch files: in more than one place: e0-p0-s0 ×2']));
  });

  it('a trained uid with no sample file in the store fails', () => {
    const r = cleanRun();
    r.sampleUids = r.sampleUids.filter((u) => u !== 'e0-p3-s1');
    expect(failed(r)).toEqual(['store: every trained uid has its sample file: no sample file: e0-p3-s1']);
  });

  it('tokens from weights older than the bound fail (a server restarted with its launch weights), unless stale samples are accepted', () => {
    const r = cleanRun();
    r.batches[2]!.oldestTokenVersion[3] = 0;
    expect(failed(r)).toEqual(['staleness within the bound (every trained token, batch files): above 1: step 2: 2']);
    expect(checkRun(r, { ...e, stalePolicy: 'accept' }).ok).toBe(true);
  });

  it('a trained sample whose versions do not cover its tokens fails, whatever the policy: its staleness is unknown', () => {
    const r = cleanRun();
    r.batches[1]!.oldestTokenVersion[0] = undefined;
    expect(checkRun(r, { ...e, stalePolicy: 'accept' }).checks.filter((c) => !c.ok).map((c) => c.detail)).toEqual(['no versions covering every token: e0-p2-s0']);
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

  it('a run that did not finish fails; without a final status the group totals are unknown', () => {
    const r = cleanRun();
    r.outcome = 'TERMINATED';
    expect(failed(r)).toEqual(['run completed: TERMINATED, 3 of 3 steps']);
    const none = cleanRun();
    delete none.final;
    none.outcome = 'FAILED: boom';
    expect(failed(none)).toEqual([
      'run completed: FAILED: boom',
      "trainer: version = max_steps = the workflow's: trainer: 3 steps on its final lineage, version 3; workflow: no final status; max_steps 3",
      'every dispatched group accounted for: no final status: the run totals are unknown',
    ]);
  });
});
