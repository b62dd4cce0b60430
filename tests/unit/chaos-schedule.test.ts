// The seeded fault schedule and the recovery figures, on made-up numbers.
import { describe, expect, it } from 'vitest';
import { scheduledFault, type ScheduleOptions } from '../../src/chaos/schedule';
import { effectiveTime, normalStepS, recoveryS } from '../../src/chaos/recovery';

const o: ScheduleOptions = { kinds: ['worker', 'temporal', 'inference', 'trainer', 'env'], everyS: 60, seed: 7, order: 'rotate' };
const first = (opts: ScheduleOptions, n: number) => Array.from({ length: n }, (_, i) => scheduledFault(opts, i));

describe('fault schedule', () => {
  it('is the same for the same seed, and another for another seed', () => {
    expect(first(o, 10)).toEqual(first(o, 10));
    expect(first({ ...o, seed: 8 }, 10).map((k) => k.atS)).not.toEqual(first(o, 10).map((k) => k.atS));
  });

  it('kills about every `everyS` (±25 %), in increasing order', () => {
    const kills = first(o, 50);
    kills.forEach((k, i) => {
      expect(k.atS).toBeGreaterThanOrEqual(60 * (i + 0.75));
      expect(k.atS).toBeLessThan(60 * (i + 1.25));
      if (i > 0) expect(k.atS).toBeGreaterThan(kills[i - 1]!.atS);
    });
  });

  it('rotate takes every kind in turn; mixed draws them, all of them over a long schedule', () => {
    const rotated = first(o, 10).map((k) => k.kind);
    expect(new Set(rotated.slice(0, 5)).size).toBe(5);
    expect(rotated.slice(5)).toEqual(rotated.slice(0, 5));
    const mixed = first({ ...o, order: 'mixed' }, 100).map((k) => k.kind);
    expect(new Set(mixed).size).toBe(5);
    expect(mixed.slice(0, 10)).not.toEqual(rotated);
  });

  it('draws signals only from those given, kill alone by default, and a stop lasts 30-120 s', () => {
    expect(new Set(first(o, 50).map((k) => k.signal))).toEqual(new Set(['kill']));
    const both = first({ ...o, signals: ['kill', 'stop'] }, 100);
    expect(new Set(both.map((k) => k.signal))).toEqual(new Set(['kill', 'stop']));
    for (const k of both) expect(k.stopS >= 30 && k.stopS < 120).toBe(true);
    // Adding signals leaves the kill-only schedule's times, kinds and picks as they were.
    expect(both.map(({ atS, kind, pick }) => ({ atS, kind, pick }))).toEqual(first(o, 100).map(({ atS, kind, pick }) => ({ atS, kind, pick })));
  });

  it('corrupt always kills (the trainer), disk sends no signal and holds 30-120 s; adding them leaves the other kinds\' draws alone', () => {
    const withFiles = first({ ...o, kinds: [...o.kinds, 'corrupt', 'disk'], signals: ['kill', 'stop'], order: 'mixed' }, 200);
    expect(new Set(withFiles.map((k) => k.kind))).toEqual(new Set([...o.kinds, 'corrupt', 'disk']));
    for (const k of withFiles.filter((f) => f.kind === 'corrupt')) expect(k.signal).toBe('kill');
    for (const k of withFiles.filter((f) => f.kind === 'disk')) {
      expect(k.signal).toBeUndefined();
      expect(k.stopS >= 30 && k.stopS < 120).toBe(true);
    }
    expect(new Set(withFiles.filter((f) => o.kinds.includes(f.kind)).map((k) => k.signal))).toEqual(new Set(['kill', 'stop']));
    // The same draws (times, picks, pauses) whatever the kinds: a schedule of the five process kinds is as it was.
    const processOnly = first({ ...o, signals: ['kill', 'stop'], order: 'mixed' }, 200);
    expect(withFiles.map(({ atS, pick, stopS }) => ({ atS, pick, stopS }))).toEqual(processOnly.map(({ atS, pick, stopS }) => ({ atS, pick, stopS })));
  });

  it('refuses an empty list of kinds', () => {
    expect(() => scheduledFault({ ...o, kinds: [] }, 0)).toThrow('at least one kind');
  });
});

describe('recovery figures', () => {
  // steps end every 2 s; a kill at 6 s: the next step still comes at the normal rate (groups it did not touch), then
  // the run stalls until 20 s, then steps are back to 2 s
  const walls = [3, 5, 7, 9, 20, 22, 24, 26];

  it('the normal step interval is the median interval, the first step left out', () => {
    expect(normalStepS([3, 5, 7, 9, 11])).toBe(2);
    expect(normalStepS([10, 11, 13, 20])).toBe(2);
    expect(() => normalStepS([3])).toThrow(RangeError);
  });

  it('recovery ends where three steps in a row run at the normal rate again, not at the first normal step', () => {
    expect(recoveryS(walls, 6, 2)).toBe(20 - 6);
    expect(recoveryS(walls, 7.5, 2)).toBe(20 - 7.5);
    expect(recoveryS(walls, 0.5, 2)).toBe(3 - 0.5); // a kill that stalled nothing: the next step boundary
    expect(recoveryS(walls, 21, 2)).toBe(22 - 21); // near the end, the steps that remain are the window
    expect(recoveryS([3, 5, 7, 9, 20, 40], 7.5, 2)).toBeUndefined(); // never back to normal
    expect(recoveryS(walls, 6, 2, 1.5, 1)).toBe(7 - 6); // a window of one step is fooled by the untouched groups
  });

  it('effective time is fault-free over faulted makespan', () => {
    expect(effectiveTime(30, 40)).toBe(0.75);
  });
});
