import { describe, expect, it } from 'vitest';
import { groupUid, splitmix32 } from '../../src/core';
import { RunState, type AdmissionLimits, type GroupRef, type GroupResult, type StalePolicy } from '../../src/workflows/run-state';

function limits(B: number, G: number, alpha: number, stalePolicy: StalePolicy = 'drop'): AdmissionLimits {
  return { samplesPerStep: B, groupSize: G, maxSamplesInSystem: Math.floor((1 + alpha) * B), maxStaleness: Math.ceil(alpha), stalePolicy };
}

function result(ref: GroupRef, startVersion: number, G: number, over: Partial<GroupResult> = {}): GroupResult {
  return { ...ref, startVersion, endVersion: startVersion, samples: G, accepted: true, rewardMean: 0.5, tokens: 10 * G, partialSamples: 0, maxSpan: 1, storeKeys: [], ...over };
}

describe('RunState admission control', () => {
  it('α = 0 is synchronous: B samples in the system, each batch started at its own version', () => {
    // B = 4 = 2 groups of G = 2; cap = floor(1 · 4) = 4 samples
    const s = new RunState(limits(4, 2, 0), 100);
    for (let step = 0; step < 5; step++) {
      const started = [s.dispatch(), s.dispatch()];
      expect(s.canDispatch()).toBe(false); // nothing more until the step's weights exist
      expect(s.takeBatch()).toBeUndefined();
      for (const g of started) expect(s.onGroupResult(result(g, s.version, 2))).toBe('buffered');
      expect(s.canDispatch()).toBe(false); // a full buffer still blocks: 4 unconsumed
      const batch = s.takeBatch()!;
      expect(batch.groups.every((g) => g.startVersion === step && batch.version === step)).toBe(true);
      expect(batch.staleness).toEqual({ mean: 0, max: 0 });
      expect(s.canDispatch()).toBe(false); // the batch in training still counts: nothing starts on the old weights
      s.onStepDone(batch);
      expect(s.canDispatch()).toBe(true);
    }
    expect([s.step, s.version, s.totals.consumedSamples]).toEqual([5, 5, 20]);
  });

  it('α = 0.5 admits floor(1.5·B) samples: 3 groups of 2 for B = 4', () => {
    const s = new RunState(limits(4, 2, 0.5), 100);
    s.dispatch();
    s.dispatch();
    s.dispatch();
    expect(s.samplesInSystem).toBe(6);
    expect(s.canDispatch()).toBe(false);
  });

  it.each([
    [2, 'drop' as const],
    [2, 'restart' as const],
    [0.5, 'drop' as const],
    [1, 'accept' as const],
  ])('α = %s with %s: bound holds at every dispatch; every sample trained at most once', (alpha, policy) => {
    const B = 8;
    const G = 2;
    const s = new RunState(limits(B, G, alpha, policy), 50);
    const rand = splitmix32(7);
    const running: { ref: GroupRef; startVersion: number }[] = [];
    const trained = new Set<string>();
    let maxStalenessSeen = 0;
    let inTraining: ReturnType<RunState['takeBatch']>;
    while (s.step < 30) {
      while (s.canDispatch()) {
        const ref = s.dispatch();
        running.push({ ref, startVersion: s.version });
        expect(s.samplesInSystem).toBeLessThanOrEqual(Math.floor((1 + alpha) * B));
      }
      // Events interleave as in the run workflow: a random running group finishes
      // (long-tailed: some stay in flight across many steps), or the train step ends.
      if (inTraining && (running.length === 0 || rand() < 0.3)) {
        s.onStepDone(inTraining);
        inTraining = undefined;
      } else if (running.length > 0) {
        const i = Math.floor(rand() ** 3 * running.length);
        const [done] = running.splice(i, 1);
        s.onGroupResult(result(done!.ref, done!.startVersion, G, { accepted: rand() > 0.1 }));
      }
      if (inTraining) continue;
      inTraining = s.takeBatch();
      if (!inTraining) continue;
      for (const g of inTraining.groups) {
        const uid = groupUid(g);
        expect(trained.has(uid)).toBe(false);
        trained.add(uid);
      }
      maxStalenessSeen = Math.max(maxStalenessSeen, inTraining.staleness.max);
    }
    expect(trained.size * G).toBe(s.totals.consumedSamples);
    expect(s.totals.consumedSamples).toBe(30 * B);
    if (policy !== 'accept') expect(maxStalenessSeen).toBeLessThanOrEqual(Math.ceil(alpha));
    else expect(s.totals.staleAcceptedSamples).toBeGreaterThan(0); // long tails do go stale; accept trains and counts them
    // the policy must actually have been exercised where staleness can exceed ⌈α⌉ often (α = 2, long tails)
    if (policy === 'drop' && alpha === 2) expect(s.totals.droppedSamples).toBeGreaterThan(0);
    if (policy === 'restart') expect(s.totals.restartedSamples).toBeGreaterThan(0);
  });
});

describe('RunState results and policies', () => {
  it('ignores a redelivered result and reports one for a group it never started', () => {
    const s = new RunState(limits(2, 2, 0), 10);
    const g = s.dispatch();
    expect(s.onGroupResult(result(g, 0, 2))).toBe('buffered');
    expect(s.onGroupResult(result(g, 0, 2))).toBe('duplicate');
    s.onStepDone(s.takeBatch()!);
    expect(s.onGroupResult(result(g, 0, 2))).toBe('duplicate');
    expect(s.onGroupResult(result({ epoch: 3, position: 1 }, 0, 2))).toBe('unknown');
    expect(s.totals.duplicateResults).toBe(2);
  });

  it('a filtered group frees its capacity and is never dispatched again', () => {
    const s = new RunState(limits(2, 2, 0), 3);
    const g = s.dispatch();
    expect(s.onGroupResult(result(g, 0, 2, { accepted: false }))).toBe('filtered');
    expect(s.canDispatch()).toBe(true);
    const seen = [s.dispatch()];
    s.onGroupResult(result(seen[0]!, 0, 2));
    s.onStepDone(s.takeBatch()!);
    seen.push(s.dispatch());
    expect(seen.map((r) => r.position)).toEqual([1, 2]); // position 0 was filtered: not revisited in epoch 0
    s.onGroupResult(result(seen[1]!, 1, 2));
    s.onStepDone(s.takeBatch()!);
    expect(s.dispatch()).toEqual({ epoch: 1, position: 0 }); // next epoch starts over
  });

  it('counts staleness from a group\'s oldest token when a server served it older weights than its dispatch version', () => {
    // B = 2 (1 group of 2), α = 1: bound 1. At version 2, a group dispatched now whose tokens came partly from version 0.
    const run = (policy: StalePolicy) => {
      const s = new RunState(limits(2, 2, 1, policy), 100);
      for (let step = 0; step < 2; step++) {
        s.onGroupResult(result(s.dispatch(), s.version, 2));
        s.onStepDone(s.takeBatch()!);
      }
      return { s, outcome: s.onGroupResult(result(s.dispatch(), 2, 2, { oldestVersion: 0 })) };
    };
    const dropped = run('drop');
    expect([dropped.outcome, dropped.s.totals.droppedSamples]).toEqual(['stale', 2]);
    const accepted = run('accept');
    expect(accepted.outcome).toBe('buffered');
    expect(accepted.s.takeBatch()!.staleness).toEqual({ mean: 2, max: 2 }); // not 0, as the dispatch version alone says
    expect(accepted.s.totals.staleAcceptedSamples).toBe(2);
  });

  it('drops a group that arrives too stale at once, freeing its capacity without a batch being taken', () => {
    // B = 2 (1 group of 2), α = 1: cap 4, bound 1. A long-tailed group started at version 0 finishes at version 2.
    const s = new RunState(limits(2, 2, 1, 'drop'), 100);
    const slow = s.dispatch();
    for (let step = 0; step < 2; step++) {
      const g = s.dispatch();
      s.onGroupResult(result(g, s.version, 2));
      s.onStepDone(s.takeBatch()!);
    }
    expect(s.samplesInSystem).toBe(2); // only the slow group, still in flight
    expect(s.onGroupResult(result(slow, 0, 2))).toBe('stale');
    expect(s.totals.droppedSamples).toBe(2);
    expect(s.samplesInSystem).toBe(0);
    expect(s.batchReady()).toBe(false);
  });

  it('restart regenerates a stale prompt before new ones', () => {
    const s = new RunState(limits(2, 2, 1, 'restart'), 100); // cap 4, staleness bound 1
    const slow = s.dispatch();
    const fast = s.dispatch();
    s.onGroupResult(result(fast, 0, 2));
    s.onStepDone(s.takeBatch()!); // version 1
    const b = s.dispatch();
    s.onGroupResult(result(b, 1, 2));
    s.onStepDone(s.takeBatch()!); // version 2
    expect(s.onGroupResult(result(slow, 0, 2))).toBe('stale'); // staleness 2 > 1
    expect(s.takeBatch()).toBeUndefined();
    expect(s.totals.restartedSamples).toBe(2);
    expect(s.dispatch()).toEqual(slow);
  });

  it('snapshots to JSON and restores the same state', () => {
    const s = new RunState(limits(4, 2, 1), 20);
    const a = s.dispatch();
    s.dispatch();
    s.dispatch();
    s.onGroupResult(result(a, 0, 2));
    const json = JSON.parse(JSON.stringify(s.snapshot()));
    const back = RunState.restore(json);
    expect(back.snapshot()).toEqual(s.snapshot());
    expect(back.dispatch()).toEqual(s.dispatch());
  });

  it('resumes from a checkpoint: consumed prompts are skipped, in-flight ones regenerated, the step continues', () => {
    const s = new RunState(limits(2, 2, 1), 6);
    const refs = [s.dispatch(), s.dispatch()];
    s.onGroupResult(result(refs[1]!, 0, 2));
    s.onStepDone(s.takeBatch()!); // position 1 consumed; position 0 still in flight
    const checkpoint = s.snapshot();
    const resumed = RunState.resumeFrom(checkpoint, checkpoint.limits, 6);
    expect([resumed.step, resumed.version]).toEqual([1, 1]);
    expect([resumed.dispatch(), resumed.dispatch()].map((r) => r.position)).toEqual([0, 2]); // cap 4 = 2 groups
    expect(resumed.canDispatch()).toBe(false);
  });

  it('refuses impossible limits', () => {
    expect(() => new RunState(limits(5, 2, 0), 10)).toThrow('not a multiple');
    expect(() => new RunState({ ...limits(4, 2, 0), maxSamplesInSystem: 2 }, 10)).toThrow('at least B');
    expect(() => new RunState(limits(4, 2, 0), 0)).toThrow('empty');
  });
});

describe('RunState failed groups', () => {
  it('frees the capacity of a group that failed, counts it, and never trains it', () => {
    const s = new RunState(limits(4, 2, 0), 10);
    const [a, b] = [s.dispatch(), s.dispatch()];
    expect(s.canDispatch()).toBe(false);
    expect(s.onGroupResult(result(a, 0, 2, { accepted: false, error: 'env exploded' }))).toBe('failed');
    expect(s.canDispatch()).toBe(true);
    expect(s.totals.failedGroups).toBe(1);
    s.onGroupResult(result(b, 0, 2));
    const c = s.dispatch();
    expect(c.position).toBe(2); // the failed prompt is skipped this epoch
    s.onGroupResult(result(c, 0, 2));
    expect(s.takeBatch()!.groups.map((g) => g.position)).toEqual([1, 2]);
  });

  it('counts infrastructure failures apart, with their samples, and reports them in the next batch only', () => {
    const s = new RunState(limits(4, 2, 1), 10);
    const [a, b, c, d] = [s.dispatch(), s.dispatch(), s.dispatch(), s.dispatch()];
    expect(s.onGroupResult(result(a, 0, 2, { accepted: false, error: 'env server: ECONNREFUSED', infra: true }))).toBe('failed');
    expect(s.onGroupResult(result(b, 0, 2, { accepted: false, error: 'bad config' }))).toBe('failed');
    expect(s.totals).toMatchObject({ failedGroups: 1, infraFailedGroups: 1, infraFailedSamples: 2 });
    s.onGroupResult(result(c, 0, 2, { envReplays: 3 }));
    s.onGroupResult(result(d, 0, 2, { envRestarts: 1 }));
    const first = s.takeBatch()!;
    expect(first.groups.map((g) => g.position)).toEqual([c.position, d.position]); // neither failed group is trained
    expect(first.events).toEqual({ infraFailedSamples: 2, envReplays: 3, envRestarts: 1, unscoredSamples: 0 });
    s.onStepDone(first);
    const [e, f] = [s.dispatch(), s.dispatch()];
    s.onGroupResult(result(e, 1, 2));
    s.onGroupResult(result(f, 1, 2));
    expect(s.takeBatch()!.events).toEqual({ infraFailedSamples: 0, envReplays: 0, envRestarts: 0, unscoredSamples: 0 });
    expect(s.totals).toMatchObject({ envReplays: 3, envRestarts: 1, infraFailedSamples: 2 });
  });

  it('counts groups with an unscored response as failed (not infrastructure) and their samples as unscored, in the next batch', () => {
    const s = new RunState(limits(4, 2, 1), 10);
    const [a, b, c] = [s.dispatch(), s.dispatch(), s.dispatch()];
    expect(s.onGroupResult(result(a, 0, 2, { accepted: false, error: 'the judge gave no readable grade', unscored: true }))).toBe('failed');
    expect(s.totals).toMatchObject({ failedGroups: 1, infraFailedGroups: 0, unscoredSamples: 2 });
    s.onGroupResult(result(b, 0, 2));
    s.onGroupResult(result(c, 0, 2));
    const batch = s.takeBatch()!;
    expect(batch.groups.map((g) => g.position)).toEqual([b.position, c.position]);
    expect(batch.events.unscoredSamples).toBe(2);
  });

  it('the failing stop counts both kinds and its summary names each', () => {
    const s = new RunState(limits(4, 2, 1), 10);
    const refs = [s.dispatch(), s.dispatch(), s.dispatch(), s.dispatch()];
    refs.slice(0, 3).forEach((r, i) => s.onGroupResult(result(r, 0, 2, { accepted: false, error: 'x', infra: i > 0 })));
    expect(s.failingBadly(0.2)).toBe(false); // 3 failed: under the floor of 4
    s.onGroupResult(result(refs[3]!, 0, 2, { accepted: false, error: 'x', infra: true }));
    expect(s.failingBadly(1)).toBe(true); // 4 of 4
    expect(s.failingSummary()).toBe('4 of 4 groups failed (3 for infrastructure reasons, 1 for others)');
  });

  it('carries the events of the next batch across continue-as-new (snapshot, restore)', () => {
    const s = new RunState(limits(4, 2, 1), 10);
    s.onGroupResult(result(s.dispatch(), 0, 2, { accepted: false, error: 'timeout', infra: true, envReplays: 1 }));
    const back = RunState.restore(JSON.parse(JSON.stringify(s.snapshot())));
    back.onGroupResult(result(back.dispatch(), 0, 2));
    back.onGroupResult(result(back.dispatch(), 0, 2));
    expect(back.takeBatch()!.events).toEqual({ infraFailedSamples: 2, envReplays: 1, envRestarts: 0, unscoredSamples: 0 });
  });
});

describe('RunState totals', () => {
  it('one record of the run totals: dispatch peak, trained batches, staleness and partial means in the view', () => {
    // B = 4 (2 groups of 2), α = 1: cap 8
    const s = new RunState(limits(4, 2, 1), 10);
    const refs = [s.dispatch(), s.dispatch(), s.dispatch(), s.dispatch()];
    expect(s.totals.peakSamplesInSystem).toBe(8);
    s.onGroupResult(result(refs[0]!, 0, 2, { rewardMean: 1, partialSamples: 2, maxSpan: 2 }));
    s.onGroupResult(result(refs[1]!, 0, 2, { rewardMean: 0 }));
    s.onStepDone(s.takeBatch()!); // step 0: staleness 0, reward (1·2 + 0·2) / 4
    s.onGroupResult(result(refs[2]!, 0, 2));
    s.onGroupResult(result(refs[3]!, 0, 2));
    const second = s.takeBatch()!; // trained at version 1, started at 0: staleness 1
    expect(s.view().staleness).toEqual({ mean: 0, max: 0 }); // the batch in training is not counted until its step is done
    s.onStepDone(second);
    expect(s.totals).toMatchObject({ dispatchedGroups: 4, consumedSamples: 8, trainedSamples: 8, stalenessSum: 4, stalenessMax: 1, partialSamples: 2, maxPartialSpan: 2, lastRewardMean: 0.5 });
    expect(s.view()).toMatchObject({ step: 2, version: 2, staleness: { mean: 0.5, max: 1 }, partial: { ratio: 0.25, maxSpan: 2 } });
  });

  it('restores the totals of an execution continued-as-new before they had one home (snapshot counters + run stats)', () => {
    const s = new RunState(limits(4, 2, 1), 10);
    s.dispatch();
    const { totals, ...old } = s.snapshot();
    const legacy = { ...old, counters: { dispatchedGroups: 7, failedGroups: 1 } };
    const back = RunState.restore(legacy as unknown as ReturnType<RunState['snapshot']>, { ...legacy.counters, trainedSamples: 12, stalenessSum: 6 });
    expect(back.totals).toMatchObject({ dispatchedGroups: 7, failedGroups: 1, trainedSamples: 12, stalenessSum: 6, droppedSamples: 0 });
    expect(totals.dispatchedGroups).toBe(1);
  });
});
