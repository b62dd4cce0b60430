import { describe, expect, it } from 'vitest';
import { appendSpans, emptyGeneration, generateToCompletion, GenerationAbortedTooOftenError, type CompletionCall, type CompletionDelta, type FinishReason, type StreamedCompletion } from '../../src/gpu-bridge/continuation';
import { EngineUnavailableError, isServerLost } from '../../src/gpu-bridge/errors';

/** One scripted call: the deltas it streams, then its finish reason or the error that cut it. */
type Reply = { deltas: CompletionDelta[]; finish?: FinishReason; error?: Error };

/** A scripted engine: each call streams the next scripted reply and records what it was asked. */
function scripted(replies: Reply[]) {
  const calls: CompletionCall[] = [];
  const complete: StreamedCompletion = async (call, onDelta) => {
    calls.push(call);
    const r = replies.shift();
    if (!r) throw new Error('unexpected call');
    r.deltas.forEach(onDelta);
    if (r.error) throw r.error;
    return r.finish!;
  };
  return { calls, complete };
}

/** Tokens `ids` by `version`, at positions from `start` of the call's output, as one delta. */
const delta = (ids: number[], version: number, start = 0): CompletionDelta => ({
  token_ids: ids,
  logprobs: ids.map((i) => -i / 10),
  version_spans: ids.length ? [{ version, start, end: start + ids.length }] : [],
});

const part = (ids: number[], version: number, finish: FinishReason): Reply => ({ deltas: [delta(ids, version)], finish });
const lost = () => new EngineUnavailableError('http://a: ECONNRESET', true);

describe('generateToCompletion', () => {
  it('passes a completion that was never cut through unchanged, delta by delta', async () => {
    const e = scripted([{ deltas: [delta([5, 6], 3), delta([7], 3, 2)], finish: 'stop' }]);
    const seen: number[] = [];
    const g = await generateToCompletion(e.complete, [1, 2], 10, undefined, { onProgress: (p) => seen.push(p.token_ids.length) });
    expect(g).toEqual({ token_ids: [5, 6, 7], logprobs: [-0.5, -0.6, -0.7], finish_reason: 'stop', version_spans: [{ version: 3, start: 0, end: 3 }], text: '', aborts: 0, failovers: 0, calls: 1 });
    expect(e.calls).toEqual([{ prompt: [1, 2], max_tokens: 10, attempt: 0 }]);
    expect(seen).toEqual([2, 3, 3]); // after each delta, then at the end
  });

  it('continues an aborted completion from prompt + partial tokens with the remaining budget, across versions', async () => {
    // 3 tokens by version 0, abort (weight update), 2 more by version 1, abort again, the last 3 by version 2
    const e = scripted([part([5, 6, 7], 0, 'abort'), part([8, 9], 1, 'abort'), part([10, 11, 12], 2, 'length')]);
    const g = await generateToCompletion(e.complete, [1, 2], 8);
    expect(e.calls.map((c) => [c.prompt, c.max_tokens, c.attempt])).toEqual([
      [[1, 2], 8, 0],
      [[1, 2, 5, 6, 7], 5, 1],
      [[1, 2, 5, 6, 7, 8, 9], 3, 2],
    ]);
    expect(g.token_ids).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
    expect(g.version_spans).toEqual([
      { version: 0, start: 0, end: 3 },
      { version: 1, start: 3, end: 5 },
      { version: 2, start: 5, end: 8 },
    ]);
    expect([g.finish_reason, g.aborts, g.failovers]).toEqual(['length', 2, 0]);
  });

  it('keeps the tokens a lost server streamed and continues from them (a failover, not an abort)', async () => {
    const e = scripted([{ deltas: [delta([5, 6], 1)], error: lost() }, part([7], 1, 'stop')]);
    const g = await generateToCompletion(e.complete, [1], 10, undefined, { isServerLost });
    expect(e.calls.map((c) => [c.prompt, c.max_tokens])).toEqual([
      [[1], 10],
      [[1, 5, 6], 8],
    ]);
    expect([g.token_ids, g.version_spans, g.failovers, g.aborts]).toEqual([[5, 6, 7], [{ version: 1, start: 0, end: 3 }], 1, 0]);
  });

  it('propagates other failures, and a lost server once failovers run out', async () => {
    await expect(generateToCompletion(scripted([{ deltas: [], error: new Error('bug') }]).complete, [1], 5, undefined, { isServerLost })).rejects.toThrow('bug');
    const e = scripted(Array.from({ length: 3 }, () => ({ deltas: [], error: lost() })));
    await expect(generateToCompletion(e.complete, [1], 5, undefined, { isServerLost, maxFailovers: 2 })).rejects.toThrow('ECONNRESET');
    expect(e.calls).toHaveLength(3);
  });

  it('merges spans of one version split by an abort that brought no new weights', () => {
    expect(appendSpans([{ version: 1, start: 0, end: 3 }], [{ version: 1, start: 0, end: 2 }], 3)).toEqual([{ version: 1, start: 0, end: 5 }]);
  });

  it('an abort that used up the budget ends with length, without another call', async () => {
    const e = scripted([part([5, 6], 0, 'abort')]);
    const g = await generateToCompletion(e.complete, [1], 2);
    expect([g.finish_reason, g.token_ids, e.calls.length]).toEqual(['length', [5, 6], 1]);
  });

  it('resumes from a recorded partial generation, and returns a finished one without a call', async () => {
    const e = scripted([part([9], 4, 'stop')]);
    const partial = { ...emptyGeneration(), token_ids: [5, 6], logprobs: [-1, -1], version_spans: [{ version: 3, start: 0, end: 2 }], aborts: 1, calls: 1 };
    const g = await generateToCompletion(e.complete, [1], 5, partial);
    expect(e.calls[0]).toEqual({ prompt: [1, 5, 6], max_tokens: 3, attempt: 1 });
    expect(g.version_spans).toEqual([{ version: 3, start: 0, end: 2 }, { version: 4, start: 2, end: 3 }]);
    expect(partial.token_ids).toEqual([5, 6]); // the recorded partial is not changed
    const done = await generateToCompletion(scripted([]).complete, [1], 5, { ...partial, finish_reason: 'stop' });
    expect(done.token_ids).toEqual([5, 6]);
  });

  it('gives up, retryably, when aborted without end', async () => {
    const e = scripted(Array.from({ length: 5 }, () => part([], 0, 'abort')));
    await expect(generateToCompletion(e.complete, [1], 10, undefined, { maxAborts: 3 })).rejects.toThrow(GenerationAbortedTooOftenError);
  });

  it('rejects an engine delta whose logprobs do not match its tokens', async () => {
    const e = scripted([{ deltas: [{ ...delta([5, 6], 0), logprobs: [-1] }], finish: 'stop' }]);
    await expect(generateToCompletion(e.complete, [1], 10)).rejects.toThrow('2 tokens but 1 logprobs');
  });
});
