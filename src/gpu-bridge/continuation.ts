/**
 * Interruptible generation (AReaL) / SkyRL's retry loop, streamed. Tokens
 * reach the bridge as the server produces them, so a generation keeps every
 * token it received when its call ends early, for either reason:
 * - a weight update paused the server with mode "abort": the call ends with
 *   finish_reason "abort" and the partial tokens;
 * - the server died (the connection failed): the router marked it down.
 * Either way the bridge re-submits prompt + tokens so far with the remaining
 * budget (to a live server), and tokens, logprobs, text and per-span weight
 * versions accumulate, so the trajectory that asked never notices.
 */

export interface VersionSpan {
  version: number;
  start: number;
  end: number;
}

export type FinishReason = 'stop' | 'length' | 'abort';

/** What one streamed chunk adds to one sample; spans are positions within the call's output. */
export interface CompletionDelta {
  token_ids: number[];
  logprobs: number[];
  version_spans: VersionSpan[];
  text?: string | null;
}

export interface CompletionCall {
  prompt: number[];
  max_tokens: number;
  /** Which completion call of this generation this is (0 first); callers derive per-call seeds from it. */
  attempt: number;
}

/** One streamed completion call for one sample: deltas go to `onDelta` as they arrive; resolves with the finish reason. */
export type StreamedCompletion = (call: CompletionCall, onDelta: (d: CompletionDelta) => void) => Promise<FinishReason>;

/** A generation under way (what a heartbeat records), finished once `finish_reason` is set. */
export interface PartialGeneration {
  token_ids: number[];
  logprobs: number[];
  version_spans: VersionSpan[];
  /** Decoded text so far (empty for backends without a tokenizer). */
  text: string;
  /** Calls ended by a weight sync's abort and continued. */
  aborts: number;
  /** Calls cut by a lost server and continued on another. */
  failovers: number;
  /** Completion calls made so far (the next call's `attempt`). */
  calls: number;
  finish_reason?: 'stop' | 'length';
}

export type Generation = PartialGeneration & { finish_reason: 'stop' | 'length' };

export const emptyGeneration = (): PartialGeneration => ({ token_ids: [], logprobs: [], version_spans: [], text: '', aborts: 0, failovers: 0, calls: 0 });

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

/** Adds a delta of a call that started when `g` held `offset` tokens (in place: a stream adds many). */
export function appendDelta(g: PartialGeneration, d: CompletionDelta, offset: number): void {
  if (d.logprobs.length !== d.token_ids.length) throw new Error(`engine returned ${d.token_ids.length} tokens but ${d.logprobs.length} logprobs`);
  g.token_ids.push(...d.token_ids);
  g.logprobs.push(...d.logprobs);
  g.version_spans = appendSpans(g.version_spans, d.version_spans, offset);
  g.text += d.text ?? '';
}

export interface ContinueOptions {
  maxAborts?: number;
  maxFailovers?: number;
  /** Called after every delta and every ended call, with the generation so far (the same object, updated). */
  onProgress?: (g: PartialGeneration) => void;
  /** Tells a lost server (continue elsewhere) from other failures (propagate). */
  isServerLost?: (e: unknown) => boolean;
}

/**
 * Runs completion calls until the sample finishes for a reason other than
 * abort. `partial` continues a generation already under way (from an earlier
 * call, or a heartbeat recorded before a crash), so nothing received is thrown away.
 */
export async function generateToCompletion(complete: StreamedCompletion, prompt: readonly number[], maxTokens: number, partial: PartialGeneration = emptyGeneration(), opts: ContinueOptions = {}): Promise<Generation> {
  const maxAborts = opts.maxAborts ?? 64;
  const maxFailovers = opts.maxFailovers ?? 8;
  const g: PartialGeneration = { ...partial, token_ids: [...partial.token_ids], logprobs: [...partial.logprobs] };
  for (;;) {
    if (g.finish_reason) return g as Generation;
    const offset = g.token_ids.length;
    const remaining = maxTokens - offset;
    if (remaining <= 0) return { ...g, finish_reason: 'length' };
    const call = { prompt: [...prompt, ...g.token_ids], max_tokens: remaining, attempt: g.calls };
    g.calls += 1;
    let finish: FinishReason;
    try {
      finish = await complete(call, (d) => {
        appendDelta(g, d, offset);
        opts.onProgress?.(g);
      });
    } catch (e) {
      if (!opts.isServerLost?.(e)) throw e;
      g.failovers += 1;
      opts.onProgress?.(g);
      if (g.failovers > maxFailovers) throw e;
      continue;
    }
    if (finish === 'abort') {
      g.aborts += 1;
      if (g.aborts > maxAborts) throw new GenerationAbortedTooOftenError(`generation aborted ${g.aborts} times (limit ${maxAborts})`);
    } else {
      g.finish_reason = finish;
    }
    opts.onProgress?.(g);
  }
}
