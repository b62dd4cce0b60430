// The env's episode info on its way to the step record: numbers and booleans only, bounded, averaged over the
// samples that reported each key.
import { describe, expect, it } from 'vitest';
import { envInfoMetrics, numericInfo, sumEnvInfo } from '../../src/workflows/env-info';

describe('env info in step records', () => {
  it('keeps numbers and booleans (as 0/1) and drops the rest; none is undefined', () => {
    expect(numericInfo({ turn: 4, success: true, submitted: false, task: 't1-002', tests_passed_fraction: null, bad: Number.NaN })).toEqual({ turn: 4, success: 1, submitted: 0 });
    expect(numericInfo({ task: 'x' })).toBeUndefined();
    expect(numericInfo(undefined)).toBeUndefined();
  });

  it('keeps at most 16 keys, so a chatty env cannot swell the histories', () => {
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i]));
    expect(Object.keys(numericInfo(many)!)).toHaveLength(16);
  });

  it('averages each key over the samples that reported it, across groups', () => {
    const groupA = sumEnvInfo([{ turn: 2, success: 1 }, { turn: 4, success: 0 }]);
    const groupB = sumEnvInfo([{ turn: 6, tests_passed_fraction: 0.5 }, undefined]);
    expect(groupA).toEqual({ turn: [6, 2], success: [1, 2] });
    expect(envInfoMetrics(sumEnvInfo([groupA, groupB, undefined]))).toEqual({ 'env/turn': 4, 'env/success': 0.5, 'env/tests_passed_fraction': 0.5 });
    expect(sumEnvInfo([undefined, undefined])).toBeUndefined();
    expect(envInfoMetrics(undefined)).toEqual({});
  });
});
