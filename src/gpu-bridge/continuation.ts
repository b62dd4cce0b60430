/**
 * Interruptible generation (AReaL) / SkyRL's retry loop. When a weight update
 * pauses the inference servers with mode "abort", in-flight completions come
 * back early with finish_reason "abort" and their partial tokens. The bridge
 * re-submits prompt + partial tokens with the remaining token budget; the
 * server holds the request until it resumes, and the new weights continue it.
 * Tokens, logprobs and per-span weight versions accumulate, so the trajectory
 * that asked never notices the update.
 */

export interface VersionSpan {
  version: number;
  start: number;
  end: number;
}

/** What one completion call returns for one sample (a choice of the wire response). */
export interface Completion {
  token_ids: number[];
  logprobs: number[];
  finish_reason: 'stop' | 'length' | 'abort';
  version_spans: VersionSpan[];
}

export interface CompletionCall {
  prompt: number[];
  max_tokens: number;
  /** Which attempt this is (0 first); callers derive per-attempt seeds from it. */
  attempt: number;
}

export interface Generation {
  token_ids: number[];
  logprobs: number[];
  finish_reason: 'stop' | 'length';
  version_spans: VersionSpan[];
  /** How many times the generation was aborted and continued. */
  aborts: number;
}

/** Thrown when a generation was aborted more often than allowed (servers stuck in pause/resume cycles); retryable. */
export class GenerationAbortedTooOftenError extends Error {
  override readonly name = 'GenerationAbortedTooOftenError';
}

/** Appends `next`'s spans, shifted by `offset`, merging a span that continues the same version. */
export function appendSpans(spans: VersionSpan[], next: readonly VersionSpan[], offset: number): VersionSpan[] {
  const out = spans.map((s) => ({ ...s }));
  for (const s of next) {
    if (s.end <= s.start) continue;
    const shifted = { version: s.version, start: s.start + offset, end: s.end + offset };
    const last = out[out.length - 1];
    if (last && last.version === shifted.version && last.end === shifted.start) last.end = shifted.end;
    else out.push(shifted);
  }
  return out;
}

/**
 * Runs `complete` until the sample finishes for a reason other than abort.
 * `partial` continues a generation already under way (e.g. recorded before a
 * worker crash), so nothing generated is thrown away.
 */
export async function generateToCompletion(
  complete: (call: CompletionCall) => Promise<Completion>,
  prompt: readonly number[],
  maxTokens: number,
  opts: { maxAborts?: number; partial?: Generation; onProgress?: (g: Generation) => void } = {},
): Promise<Generation> {
  const maxAborts = opts.maxAborts ?? 64;
  let acc: Generation = opts.partial ?? { token_ids: [], logprobs: [], finish_reason: 'length', version_spans: [], aborts: 0 };
  for (let attempt = 0; ; attempt++) {
    const remaining = maxTokens - acc.token_ids.length;
    if (remaining <= 0) return { ...acc, finish_reason: 'length' };
    const c = await complete({ prompt: [...prompt, ...acc.token_ids], max_tokens: remaining, attempt });
    if (c.logprobs.length !== c.token_ids.length) throw new Error(`engine returned ${c.token_ids.length} tokens but ${c.logprobs.length} logprobs`);
    acc = {
      token_ids: [...acc.token_ids, ...c.token_ids],
      logprobs: [...acc.logprobs, ...c.logprobs],
      finish_reason: c.finish_reason === 'abort' ? 'length' : c.finish_reason,
      version_spans: appendSpans(acc.version_spans, c.version_spans, acc.token_ids.length),
      aborts: acc.aborts + (c.finish_reason === 'abort' ? 1 : 0),
    };
    opts.onProgress?.(acc);
    if (c.finish_reason !== 'abort') return acc;
    if (acc.aborts > maxAborts) throw new GenerationAbortedTooOftenError(`generation aborted ${acc.aborts} times (limit ${maxAborts})`);
  }
}
