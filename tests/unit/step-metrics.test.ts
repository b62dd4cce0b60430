// A step's record and the idle clocks behind its ratios, on hand-computed numbers.
import { describe, expect, it } from 'vitest';
import { summarizeBatch, type Batch, type GroupResult } from '../../src/workflows/run-state';
import { RolloutIdleClock, stepRecord, validationRecord } from '../../src/workflows/step-metrics';
import { METRIC } from '../../src/core';

const group = (position: number, rewardMean: number, partialSamples: number, maxSpan: number): GroupResult => ({
  epoch: 0, position, startVersion: 0, endVersion: 1, samples: 4, accepted: true, rewardMean, tokens: 40, partialSamples, maxSpan, storeKeys: [],
});

describe('stepRecord', () => {
  it('sums the batch, times the phases and passes the trainer metrics under train/', () => {
    const batch: Batch = { step: 3, version: 3, groups: [group(0, 0.5, 1, 2), group(1, 0.25, 0, 1)], staleness: { mean: 0.5, max: 1 }, events: { infraFailedSamples: 4, envReplays: 2, envRestarts: 1, unscoredSamples: 2 } };
    const b = summarizeBatch(batch);
    expect(b).toEqual({ samples: 8, tokens: 80, rewardMean: 0.375, partialSamples: 1, maxSpan: 2 }); // (0.5·4 + 0.25·4) / 8
    // previous step ended at 0; batch ready at 6 s, trained at 9 s, synced at 10 s; 2 s with nothing running
    const r = stepRecord({ run_id: 'r', step: 3, version: 4, wall_s: 100 }, batch, { lastStepEnd: 0, batchAt: 6000, trainedAt: 9000, now: 10_000, rolloutIdleMs: 2000 }, { metrics: { 'losses/total': 0.1 } }, 3);
    expect(r).toEqual({
      run_id: 'r', step: 3, version: 4, wall_s: 100,
      [METRIC.samples]: 8, [METRIC.tokens]: 80, [METRIC.rewardMean]: 0.375,
      [METRIC.stalenessMean]: 0.5, [METRIC.stalenessMax]: 1, [METRIC.partialRatio]: 1 / 8, [METRIC.partialMaxSpan]: 2,
      [METRIC.waitBatch]: 6, [METRIC.train]: 3, [METRIC.syncWeights]: 1,
      [METRIC.trainerIdle]: 0.6, [METRIC.rolloutIdle]: 0.2, [METRIC.syncAborted]: 3,
      [METRIC.infraFailed]: 4, [METRIC.envReplayed]: 2, [METRIC.envRestarted]: 1, [METRIC.rewardUnscored]: 2,
      'train/losses/total': 0.1,
    });
  });

  it('a validation record carries each env tag', () => {
    const v = validationRecord({ run_id: 'r', step: 0, version: 0, wall_s: 1 }, { steps: 0, version: 0, samples: 8, failedGroups: 1, rewardMean: 0.5, byTag: { math: { samples: 8, rewardMean: 0.5 } } });
    expect(v).toEqual({ run_id: 'r', step: 0, version: 0, wall_s: 1, 'val/reward_mean': 0.5, 'val/samples': 8, 'val/failed_groups': 1, 'val/math/reward_mean': 0.5 });
  });
});

describe('RolloutIdleClock', () => {
  it('counts only the stretches with nothing running, per interval', () => {
    const clock = new RolloutIdleClock(0); // idle from 0
    clock.note(4, 1000); // groups start at 1 s: 1 s idle
    clock.note(4, 1500); // still running: no change
    clock.note(0, 3000); // all reported at 3 s: idle again
    expect(clock.take(3500)).toBe(1500); // 1 s + 0.5 s
    clock.note(8, 4000); // the next interval starts idle at 3.5 s
    expect(clock.take(5000)).toBe(500);
    expect(clock.take(6000)).toBe(0); // running throughout
  });
});
