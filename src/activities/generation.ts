/**
 * The streamed generate calls behind generateTurn and generateGroupTurn. Each
 * choice's tokens are kept as they arrive and reported as progress (heartbeat
 * details), so neither a weight sync's abort, nor a dead inference server
 * (the router marks it down and the choice continues on another), nor a dead
 * worker (a retried attempt resumes from the heartbeat) loses a token.
 */
import {
  appendDelta,
  emptyGeneration,
  generateToCompletion,
  isServerLost,
  type ChatMessage,
  type CompletionCall,
  type FinishReason,
  type Generation,
  type InferenceClient,
  type PartialGeneration,
  type StreamedCompletion,
} from '../gpu-bridge';
import type { EpisodeGeneration } from '../envs/env';
import type { ActivityDeps } from './deps';

/** What a generate activity heartbeats: the prompt's token ids once known, and each choice so far. */
export interface GenerationProgress {
  prompt?: number[];
  choices: PartialGeneration[];
}

export interface Sampling {
  max_tokens: number;
  temperature: number;
  top_p: number;
  /** Absent in runs planned before it existed: the server's default (-1, no top-k). */
  top_k?: number;
  seed: number;
}

/** How many lost servers one call may fail over before the activity attempt gives up (and Temporal retries it). */
const MAX_FAILOVERS = 8;

export const newProgress = (choices: number): GenerationProgress => ({ choices: Array.from({ length: choices }, emptyGeneration) });

/** One activity attempt's generation settings: where to route, what to ask of the servers. */
export interface GenerationRequest {
  deps: ActivityDeps;
  affinity: string;
  sampling: Sampling;
  /** The run's latest weights version: no server may answer with older ones. */
  minVersion: number | undefined;
  simLength: SimLength;
  signal: AbortSignal;
  report: (p: GenerationProgress) => void;
}

/**
 * The first request of a turn-0 generation: the server applies the chat
 * template (we never tokenize) and streams the prompt's ids, then each
 * choice's tokens. A server lost before the prompt arrived is asked again
 * elsewhere; after, the unfinished choices continue by completions.
 */
export async function streamChat(r: GenerationRequest, progress: GenerationProgress, messages: ChatMessage[], seed: number): Promise<void> {
  const { max_tokens, temperature, top_p, top_k } = r.sampling;
  const req = { messages, max_tokens, temperature, top_p, top_k, seed, n: progress.choices.length, ...minVersionField(r), ...r.simLength() };
  for (let lost = 0; !progress.prompt; lost++) {
    try {
      await r.deps.router.run(r.affinity, (client) =>
        client.streamChat(
          req,
          (chunk) => {
            if (chunk.prompt_token_ids) progress.prompt = chunk.prompt_token_ids;
            for (const c of chunk.choices) {
              const g = progress.choices[c.index]!;
              // Spans are positions within the choice, and the chat is its first call: offset 0.
              appendDelta(g, { token_ids: c.token_ids, logprobs: c.logprobs, version_spans: c.version_spans, text: c.delta.content }, 0);
              finishChoice(g, c.finish_reason);
            }
            r.report(progress);
          },
          { signal: r.signal },
        ),
      );
    } catch (e) {
      if (!isServerLost(e) || lost >= MAX_FAILOVERS) throw e;
      for (const g of progress.choices) if (!g.finish_reason && progress.prompt) g.failovers += 1;
    }
  }
}

/** Continues choice `i` from its tokens so far (by completions, on any live server) until it finishes. */
export async function completeChoice(r: GenerationRequest, progress: GenerationProgress, i: number, seedOf: (call: number) => number): Promise<Generation> {
  const prompt = progress.prompt;
  if (!prompt) throw new Error('completeChoice needs the prompt');
  return generateToCompletion(streamCompletion(r, seedOf), prompt, r.sampling.max_tokens, progress.choices[i], {
    maxFailovers: MAX_FAILOVERS,
    isServerLost,
    onProgress: (g) => {
      progress.choices[i] = g;
      r.report(progress);
    },
  });
}

/** A call that any server can answer (e.g. the next turn's token ids); a lost server is asked again elsewhere. */
export async function onAnyServer<T>(r: GenerationRequest, call: (client: InferenceClient) => Promise<T>): Promise<T> {
  for (let lost = 0; ; lost++) {
    try {
      return await r.deps.router.run(r.affinity, call);
    } catch (e) {
      if (!isServerLost(e) || lost >= MAX_FAILOVERS) throw e;
    }
  }
}

function streamCompletion(r: GenerationRequest, seedOf: (call: number) => number): StreamedCompletion {
  const { temperature, top_p, top_k } = r.sampling;
  return (call, onDelta) =>
    r.deps.router.run(r.affinity, async (client) => {
      let finish: FinishReason = 'abort'; // a stream that ended without a reason is continued
      await client.streamComplete(
        { prompt: call.prompt, max_tokens: call.max_tokens, temperature, top_p, top_k, seed: seedOf(call.attempt), ...minVersionField(r), ...r.simLength(call) },
        (chunk) => {
          const c = chunk.choices[0];
          if (!c) return;
          onDelta({ token_ids: c.token_ids, logprobs: c.logprobs, version_spans: c.version_spans, text: c.text });
          if (c.finish_reason) finish = c.finish_reason;
        },
        { signal: r.signal },
      );
      return finish;
    });
}

const minVersionField = (r: GenerationRequest) => (r.minVersion === undefined ? {} : { min_version: r.minVersion });

function finishChoice(g: PartialGeneration, reason: FinishReason | null): void {
  if (reason === 'abort') g.aborts += 1; // a weight sync cut it: continued by completions
  else if (reason) g.finish_reason = reason;
}

/**
 * The request field for an env-set natural length: the whole length on the
 * first request, what is left of it on a continuation (a call that asks for
 * the remaining max_tokens holds max_tokens − call.max_tokens tokens).
 */
export type SimLength = (call?: CompletionCall) => { sim_response_length?: number };

export function simLengthFor(generation: EpisodeGeneration | undefined, maxTokens: number): SimLength {
  const length = generation?.sim_response_length;
  return (call) => (length === undefined ? {} : { sim_response_length: Math.max(1, length - (call ? maxTokens - call.max_tokens : 0)) });
}
