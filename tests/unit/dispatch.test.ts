// What each dispatched group gets, without Temporal: its env, prompt and sampling seed.
import { describe, expect, it } from 'vitest';
import { envAt, GroupDispatch } from '../../src/workflows/dispatch';
import { DomainOrder } from '../../src/workflows/domain-order';
import type { PlanEnv, RunPlan } from '../../src/workflows/run-plan';
import { epochOrder, groupSamplingSeed } from '../../src/core';

const env = (tag: string, groupsPerStep: number, maxTokens: number): PlanEnv => ({ tag, groupsPerStep, spec: { type: 'latency_sim', config: { tag }, maxTurns: 1 }, maxTokens });
const envs = [env('math', 2, 64), env('code', 1, 256)];

describe('envAt', () => {
  it('cycles positions through the envs in blocks of their num_groups_partition share', () => {
    expect([0, 1, 2, 3, 4, 5, 6].map((p) => envAt(envs, p).tag)).toEqual(['math', 'math', 'code', 'math', 'math', 'code', 'math']);
  });
});

describe('GroupDispatch', () => {
  const plan = { runId: 'r', seed: 9, limits: { groupSize: 4 }, envs, sampling: { temperature: 1, top_p: 1 }, filter: 'std', replicate: true } as unknown as RunPlan;
  const dispatch = new GroupDispatch(plan, 10);

  it('gives a group its env, its prompt in the epoch order, and its sampling seed', () => {
    const ref = { epoch: 1, position: 2 };
    expect(dispatch.groupInput(ref, 5)).toEqual({
      runId: 'r',
      ref,
      groupUid: 'e1-p2',
      groupSize: 4,
      startVersion: 5,
      env: envs[1]!.spec,
      envSeed: epochOrder(10, 9, 1)[2],
      sampling: { temperature: 1, top_p: 1, max_tokens: 256, seed: groupSamplingSeed(9, ref) },
      filter: 'std',
      replicate: true,
    });
  });

  it('visits every prompt once per epoch, in each epoch its own order', () => {
    const seeds = (epoch: number) => Array.from({ length: 10 }, (_, position) => dispatch.envSeed({ epoch, position }));
    expect([...seeds(0)].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(seeds(1)).not.toEqual(seeds(0));
  });

  it('with domain_interleave_probs takes each prompt from DomainOrder, positions running on across epochs', () => {
    const order = () => new DomainOrder([{ name: 'a', rows: 6 }, { name: 'b', rows: 4 }], { a: 0.75, b: 0.25 }, 4, 9);
    const interleaved = new GroupDispatch(plan, 10, order());
    const expected = order();
    for (const [epoch, position] of [[0, 0], [0, 9], [1, 0], [1, 3], [3, 7]] as const) {
      expect(interleaved.envSeed({ epoch, position })).toBe(expected.at(epoch * 10 + position).seed);
    }
    // the epoch order's prompts no longer decide: epoch 1's position 0 continues the run (position 10), it does not restart it
    expect(Array.from({ length: 10 }, (_, p) => interleaved.envSeed({ epoch: 1, position: p }))).toEqual(Array.from({ length: 10 }, (_, p) => expected.at(10 + p).seed));
  });
});
