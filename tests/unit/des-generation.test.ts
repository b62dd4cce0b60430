import { describe, expect, it } from 'vitest';
import {
  batchRolloutSchedule,
  desW3,
  desW4,
  EventQueue,
  groupPassesStdFilter,
  promptReplicationSchedule,
  queueRolloutSchedule,
  responseLength,
  SimulatedInferenceServers,
  type FilteredPrompt,
  type ServerModel,
} from '../../src/bench/des';

const server = (over: Partial<ServerModel> = {}): ServerModel => ({ servers: 1, max_batch: 64, c0_s: 1, c1_s: 0, ...over });

describe('simulated inference servers', () => {
  it('a sequence of L tokens takes L steps of c0 + c1·batch', () => {
    const events = new EventQueue();
    const s = new SimulatedInferenceServers(events, server({ c0_s: 1, c1_s: 0.5 }));
    let doneAt = -1;
    s.submit([3], () => (doneAt = events.now));
    events.run();
    expect(doneAt).toBe(4.5); // 3 × (1 + 0.5·1)
    expect(s.stats().tokens).toBe(3);
  });

  it('over max_batch, sequences wait in FIFO order for a free slot', () => {
    const events = new EventQueue();
    const s = new SimulatedInferenceServers(events, server({ max_batch: 1 }));
    const done: number[] = [];
    s.submit([2], () => done.push(events.now));
    s.submit([3], () => done.push(events.now));
    events.run();
    expect(done).toEqual([2, 5]);
  });

  it('a request arriving mid-step joins at the next step boundary', () => {
    const events = new EventQueue();
    const s = new SimulatedInferenceServers(events, server());
    const done: [string, number][] = [];
    s.submit([2], () => done.push(['a', events.now]));
    events.at(0.5, () => s.submit([1], () => done.push(['b', events.now])));
    events.run();
    // a: steps [0,1) and [1,2); b joins at 1 and ends with a's second step.
    expect(done).toEqual([
      ['a', 2],
      ['b', 2],
    ]);
  });

  it('a request of n sequences ends with its longest', () => {
    const events = new EventQueue();
    const s = new SimulatedInferenceServers(events, server());
    let doneAt = -1;
    s.submit([1, 4, 2], () => (doneAt = events.now));
    events.run();
    expect(doneAt).toBe(4);
  });
});

describe('W4: prompt replication', () => {
  it('spreads a long prompt\'s responses over servers (hand-computed)', () => {
    // K = 2, c0 = c1 = 1. Prompt 0 answers 4 + 4 tokens, prompt 1 answers 1 + 1.
    // Grouped: server 0 decodes prompt 0 at batch 2: 4 steps × 3 s = 12; server 1: 1 step × 3 s.
    // Replicated: each server gets one 4 and one 1: 1 step × 3 s + 3 steps × 2 s = 9.
    const model = server({ servers: 2, c0_s: 1, c1_s: 1 });
    const lengths = [
      [4, 4],
      [1, 1],
    ];
    expect(promptReplicationSchedule(model, lengths, false).makespan_s).toBe(12);
    expect(promptReplicationSchedule(model, lengths, true).makespan_s).toBe(9);
  });

  it('with max_batch 1 replication lets a second server take half of a prompt', () => {
    // K = 2, max_batch 1, c0 = 1: grouped, server 0 runs 2 + 2 tokens one after the other (4 s); replicated, each server runs 2 + 1 (3 s).
    const model = server({ servers: 2, max_batch: 1 });
    const lengths = [
      [2, 2],
      [1, 1],
    ];
    expect(promptReplicationSchedule(model, lengths, false).makespan_s).toBe(4);
    expect(promptReplicationSchedule(model, lengths, true).makespan_s).toBe(3);
  });

  it('one response per prompt: replication changes nothing', () => {
    const r = desW4({ n: 1, prompts: 32 });
    expect(r.speedup).toBe(1);
  });

  it('default 64 × 16 on 8 servers: replication is faster', () => {
    expect(desW4().speedup).toBeGreaterThan(1);
  });
});

describe('W3: queue scheduling with dynamic filtering', () => {
  // One server, c0 = 1 s per token. Prompt 0: a 5-token response whose group is filtered; every later prompt: 1 token, passes.
  const prompts = (n: number): FilteredPrompt => (n === 0 ? { lengths: [5], passes: false } : { lengths: [1], passes: true });
  const plan = { groupsNeeded: 1, additionalPrompts: 1, replicate: true, rewardS: 0 };

  it('batch: a filtered round costs the whole round, then another round', () => {
    // round 1: prompt 0 (5 s), filtered; round 2: prompt 1 (1 s), passes: 6.
    const s = batchRolloutSchedule(server(), plan, prompts);
    expect(s.makespan_s).toBe(6);
    expect(s.rounds).toBe(2);
    expect(s.groups_filtered).toBe(1);
  });

  it('queue with one additional prompt: prompt 1 passes at 1 s while prompt 0 still runs (then aborted)', () => {
    const s = queueRolloutSchedule(server(), plan, prompts);
    expect(s.makespan_s).toBe(1);
    expect(s.groups_passed).toBe(1);
  });

  it('queue without additional prompts replaces the filtered prompt as soon as it is judged', () => {
    expect(queueRolloutSchedule(server(), { ...plan, additionalPrompts: 0 }, prompts).makespan_s).toBe(6);
  });

  it('as admission does, a passed group keeps its slot: batch refills only the missing groups, queue does not refill a passed slot', () => {
    // Need 2. Prompt 0: 1 token, passes; prompt 1: 5 tokens, passes in queue mode's test, filtered in batch's.
    const queuePrompts = (n: number): FilteredPrompt => ({ lengths: [n === 1 ? 5 : 1], passes: true });
    const need2 = { groupsNeeded: 2, additionalPrompts: 0, replicate: true, rewardS: 0 };
    // prompt 0 passes at 1 s; its slot stays taken, so prompt 2 never starts and prompt 1 ends the step at 5 s
    const q = queueRolloutSchedule(server(), need2, queuePrompts);
    expect(q.makespan_s).toBe(5);
    expect(q.prompts_started).toBe(2);
    const batchPrompts = (n: number): FilteredPrompt => ({ lengths: [1], passes: n !== 1 });
    const b = batchRolloutSchedule(server(), need2, batchPrompts);
    expect(b.rounds).toBe(2);
    expect(b.prompts_started).toBe(3); // round 1: prompts 0 and 1; round 2: the one missing group
  });

  it('reward time is paid per round in batch mode and per group in queue mode', () => {
    const withReward = { ...plan, rewardS: 0.5 };
    expect(batchRolloutSchedule(server(), withReward, prompts).makespan_s).toBe(7); // (5 + 0.5) + (1 + 0.5)
    expect(queueRolloutSchedule(server(), withReward, prompts).makespan_s).toBe(1.5);
  });

  it('the std filter drops groups with equal rewards', () => {
    expect(groupPassesStdFilter([true, true])).toBe(false);
    expect(groupPassesStdFilter([false, false, false])).toBe(false);
    expect(groupPassesStdFilter([true, false])).toBe(true);
  });

  it('default 8 × 8 with 16 additional prompts: both modes collect 8 passing groups, queue sooner', () => {
    const r = desW3();
    expect(r.modes.batch!.groups_passed).toBeGreaterThanOrEqual(8);
    expect(r.modes.queue!.groups_passed).toBe(8);
    expect(r.speedup).toBeGreaterThan(1);
  });

  it('lengths are a pure function of (seed, dataset index, sample), cut at max_tokens', () => {
    const m = { mean: 1000, sigma_prompt: 0.8, sigma_sample: 0.4, max: 4096 };
    expect(responseLength(m, 1, 17, 3)).toBe(responseLength(m, 1, 17, 3));
    const xs = Array.from({ length: 4000 }, (_, i) => responseLength({ ...m, max: 1e9 }, 1, i, 0));
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(Math.abs(mean / 1000 - 1)).toBeLessThan(0.05);
    expect(Math.max(...Array.from({ length: 4000 }, (_, i) => responseLength(m, 1, i, 0)))).toBe(4096);
  });
});
