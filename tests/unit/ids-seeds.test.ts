// Names and seeds a run derives: each built in one module (src/workflows/ids.ts,
// src/workflows/seeds.ts) and pinned here, since a change to either changes the
// ids of running workflows' children or the prompts and samples of a resumed run.
import { describe, expect, it } from 'vitest';
import { batchKey, checkpointDir, childWorkflowId, choiceSeed, contextKey, groupSamplingSeed, groupUid, groupWorkflowId, lockstepWorkflowId, memberSamplingSeed, parseSampleUid, sampleKey, sampleUid, trainStepWorkflowId, turnSeed, VAL_SEED_BASE, validateWorkflowId, validationGroupUid, validationSeeds } from '../../src/core';

describe('ids', () => {
  it('builds every name in its recorded format', () => {
    const ref = { epoch: 2, position: 17 };
    expect([groupUid(ref), sampleUid(groupUid(ref), 3), validationGroupUid(20, 'math', 1)]).toEqual(['e2-p17', 'e2-p17-s3', 'val20-math-g1']);
    expect([groupWorkflowId('r', ref), lockstepWorkflowId('r', ref), trainStepWorkflowId('r', 4), validateWorkflowId('r', 20)]).toEqual(['r/e2-p17', 'r/lockstep-e2-p17', 'r/train-4', 'r/val-20']);
    expect([childWorkflowId('r/e2-p17', 's', 3), childWorkflowId('r/val-20', 'g', 0)]).toEqual(['r/e2-p17/s3', 'r/val-20/g0']);
    expect([contextKey('r', 'e0-p1-s2'), sampleKey('r', 'e0-p1-s2'), batchKey('r', 12), checkpointDir('/runs/x', 2)]).toEqual(['r/trajectories/e0-p1-s2.json', 'r/samples/e0-p1-s2.json', 'r/batches/step-000012.jsonl', '/runs/x/checkpoints/step-000002']);
  });

  it('parses a sample uid back to its group and member, and refuses anything else', () => {
    expect(parseSampleUid(sampleUid(groupUid({ epoch: 3, position: 250 }), 7))).toEqual({ epoch: 3, position: 250, member: 7 });
    for (const bad of ['e0-p1', 'val0-math-g1-s0', 'e0-p1-s2.json', '']) expect(() => parseSampleUid(bad)).toThrow('not a sample uid');
  });
});

describe('seeds', () => {
  it('derives the sampling seeds as the runs recorded so far did', () => {
    // ⌊splitmix32(seed ^ (epoch·7919 + position))·2³¹⌋, values pinned from the code before seeds.ts existed
    expect([groupSamplingSeed(42, { epoch: 0, position: 0 }), groupSamplingSeed(42, { epoch: 1, position: 5 }), groupSamplingSeed(7, { epoch: 0, position: 3 })]).toEqual([469955862, 1916526787, 743435172]);
    expect(memberSamplingSeed(100, 2)).toBe(100 + 2 * 1_000_003);
    expect(turnSeed(5, 3)).toBe(8); // continuations too: the server keys draws on the token's position
    expect(choiceSeed(5, 2, 1)).toBe(5 + 2 * 104_729 + 2 * 7919);
  });

  it('validation draws the same prompts every time, outside the training seeds 0..N-1', () => {
    expect(validationSeeds(3, 2)).toEqual({ envSeed: 2 ** 30 + 2, samplingSeed: 3 + 2 * 7919 });
    expect(VAL_SEED_BASE).toBe(2 ** 30);
  });
});
