import { describe, expect, it } from 'vitest';
import { appendSpans, generateToCompletion, GenerationAbortedTooOftenError, type Completion, type CompletionCall } from '../../src/gpu-bridge/continuation';

/** A scripted engine: each call returns the next scripted completion and records what it was asked. */
function scripted(replies: Completion[]) {
  const calls: CompletionCall[] = [];
  return {
    calls,
    complete: async (call: CompletionCall) => {
      calls.push(call);
      const r = replies.shift();
      if (!r) throw new Error('unexpected call');
      return r;
    },
  };
}

const part = (ids: number[], version: number, finish: Completion['finish_reason']): Completion => ({
  token_ids: ids,
  logprobs: ids.map((i) => -i / 10),
  finish_reason: finish,
  version_spans: ids.length ? [{ version, start: 0, end: ids.length }] : [],
});

describe('generateToCompletion', () => {
  it('passes a completion that was never aborted through unchanged', async () => {
    const e = scripted([part([5, 6, 7], 3, 'stop')]);
    const g = await generateToCompletion(e.complete, [1, 2], 10);
    expect(g).toEqual({ token_ids: [5, 6, 7], logprobs: [-0.5, -0.6, -0.7], finish_reason: 'stop', version_spans: [{ version: 3, start: 0, end: 3 }], aborts: 0 });
    expect(e.calls).toEqual([{ prompt: [1, 2], max_tokens: 10, attempt: 0 }]);
  });

  it('continues an aborted completion from prompt + partial tokens with the remaining budget, across versions', async () => {
    // 3 tokens by version 0, abort (weight update), 2 more by version 1, abort again, the last 3 by version 2
    const e = scripted([part([5, 6, 7], 0, 'abort'), part([8, 9], 1, 'abort'), part([10, 11, 12], 2, 'length')]);
    const g = await generateToCompletion(e.complete, [1, 2], 8);
    expect(e.calls.map((c) => [c.prompt, c.max_tokens])).toEqual([
      [[1, 2], 8],
      [[1, 2, 5, 6, 7], 5],
      [[1, 2, 5, 6, 7, 8, 9], 3],
    ]);
    expect(g.token_ids).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
    expect(g.logprobs).toHaveLength(8);
    expect(g.version_spans).toEqual([
      { version: 0, start: 0, end: 3 },
      { version: 1, start: 3, end: 5 },
      { version: 2, start: 5, end: 8 },
    ]);
    expect([g.finish_reason, g.aborts]).toEqual(['length', 2]);
  });

  it('merges spans of one version split by an abort that brought no new weights', () => {
    expect(appendSpans([{ version: 1, start: 0, end: 3 }], [{ version: 1, start: 0, end: 2 }], 3)).toEqual([{ version: 1, start: 0, end: 5 }]);
  });

  it('an abort that used up the budget ends with length, without another call', async () => {
    const e = scripted([part([5, 6], 0, 'abort')]);
    const g = await generateToCompletion(e.complete, [1], 2);
    expect([g.finish_reason, g.token_ids, e.calls.length]).toEqual(['length', [5, 6], 1]);
  });

  it('resumes from a recorded partial generation', async () => {
    const e = scripted([part([9], 4, 'stop')]);
    const partial = { token_ids: [5, 6], logprobs: [-1, -1], finish_reason: 'length' as const, version_spans: [{ version: 3, start: 0, end: 2 }], aborts: 1 };
    const g = await generateToCompletion(e.complete, [1], 5, { partial });
    expect(e.calls[0]).toEqual({ prompt: [1, 5, 6], max_tokens: 3, attempt: 0 });
    expect(g.version_spans).toEqual([{ version: 3, start: 0, end: 2 }, { version: 4, start: 2, end: 3 }]);
  });

  it('gives up, retryably, when aborted without end', async () => {
    const e = scripted(Array.from({ length: 5 }, () => part([], 0, 'abort')));
    await expect(generateToCompletion(e.complete, [1], 10, { maxAborts: 3 })).rejects.toThrow(GenerationAbortedTooOftenError);
  });

  it('rejects an engine reply whose logprobs do not match its tokens', async () => {
    const e = scripted([{ ...part([5, 6], 0, 'stop'), logprobs: [-1] }]);
    await expect(generateToCompletion(e.complete, [1], 10)).rejects.toThrow('2 tokens but 1 logprobs');
  });
});
