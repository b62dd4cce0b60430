/**
 * Rollout activities (the EnvManager's loop body): env reset/step, one
 * generation turn, and the finished sample. Token arrays live in the sample
 * store; workflows pass keys and get small summaries back.
 */
import { Context } from '@temporalio/activity';
import { generateToCompletion, TokenizationDriftError, type ChatMessage, type Completion, type CompletionCall, type Generation, type InferenceClient, type VersionSpan } from '../gpu-bridge';
import { choiceSeed, turnSeed } from '../workflows/seeds';
import type { Sample } from '../gpu-bridge/contracts/trainer';
import { resolveEnv } from '../envs';
import type { EnvLossPolicy, EnvStep, EpisodeGeneration } from '../envs/env';
import { EnvSessionLostError } from '../envs/errors';
import type { ActivityDeps } from './deps';
import { withHeartbeat } from './heartbeat';
import { guardResult } from './payload';

/** A trajectory's token-level record, kept in the store under its context key. */
export interface TrajectoryContext {
  messages: ChatMessage[];
  prompt_ids: number[];
  /** Generated tokens and, in multi-turn episodes, the env's tokens between turns (loss_mask 0). */
  response_ids: number[];
  old_logprobs: number[];
  loss_mask: (0 | 1)[];
  version_spans: VersionSpan[];
  aborts: number;
}

export interface Sampling {
  max_tokens: number;
  temperature: number;
  top_p: number;
  seed: number;
}

export interface GenerateTurnInput {
  contextKey: string;
  observation: string;
  turn: number;
  sampling: Sampling;
  /** Keeps a trajectory's turns on one server. */
  affinity: string;
  /** What the env asked of this episode's generations (EnvReset.generation). */
  generation?: EpisodeGeneration;
}

/** One request for a whole group (no prompt replication): the G samples of a single-turn prompt. */
export interface GenerateGroupInput {
  contextKeys: string[];
  observation: string;
  sampling: Sampling;
  affinity: string;
  /** Shared by every choice of the request. */
  generation?: EpisodeGeneration;
}

export interface TurnSummary {
  action: string;
  tokens: number;
  finish_reason: 'stop' | 'length';
  aborts: number;
  versions: number[];
}

export interface EnvInput {
  envType: string;
  envConfig: Record<string, unknown>;
}

export function rolloutActivities(deps: ActivityDeps) {
  const envFor = (envType: string) => resolveEnv(envType, deps.env);

  return {
    /** The env's dataset index (valid rows, malformed ones reported); null for envs that draw episodes from the seed alone. */
    async datasetIndex(input: EnvInput) {
      const env = envFor(input.envType);
      return env.index ? env.index(env.parseConfig(input.envConfig)) : null;
    },

    async envReset(input: EnvInput & { seed: number; sample?: number }) {
      const env = envFor(input.envType);
      return guardResult('envReset', await withHeartbeat((signal) => env.reset(env.parseConfig(input.envConfig), input.seed, signal, input.sample)), deps.maxResultBytes);
    },

    /**
     * One env step. A lost env session under on_env_loss replay (also the
     * default, so workflows that pass no policy behave as before it existed)
     * is rebuilt here and the step applied to it (`replayed`); under restart
     * or drop the EnvSessionLostError goes to the workflow, which decides.
     */
    async envStep(input: EnvInput & { state: unknown; action: string; onLoss?: EnvLossPolicy }): Promise<EnvStep<unknown> & { replayed?: true }> {
      const env = envFor(input.envType);
      const config = env.parseConfig(input.envConfig);
      const attempt = Context.current().info.attempt - 1;
      const step = await withHeartbeat(async (signal): Promise<EnvStep<unknown> & { replayed?: true }> => {
        try {
          return await env.step(config, input.state, input.action, signal, attempt);
        } catch (e) {
          if (!(e instanceof EnvSessionLostError) || (input.onLoss ?? 'replay') !== 'replay' || !env.rebuild) throw e;
          const state = await env.rebuild(config, input.state, signal);
          return { ...(await env.step(config, state, input.action, signal, attempt)), replayed: true };
        }
      });
      return guardResult('envStep', step, deps.maxResultBytes);
    },

    /**
     * One turn: the server applies the chat template to the conversation so
     * far (we never tokenize), generation runs to completion across weight
     * updates (abort -> continue from partial tokens), and the context grows
     * by the env's tokens (masked) and the generated ones.
     */
    async generateTurn(input: GenerateTurnInput): Promise<TurnSummary> {
      const ctx = input.turn === 0 ? emptyContext() : await deps.store.get<TrajectoryContext>(input.contextKey);
      ctx.messages.push({ role: 'user', content: input.observation });
      const { max_tokens, temperature, top_p, seed } = input.sampling;
      const simLength = simLengthFor(input.generation, max_tokens);

      return withHeartbeat(async (signal) => {
        const lease = deps.pool.acquire(input.affinity);
        const client = deps.inference.get(lease.url)!;
        const more = continuations(client, input.sampling, (attempt) => turnSeed(seed, input.turn, attempt), simLength, signal);
        let prompt: number[];
        let generation: Generation;
        try {
          if (input.turn === 0) {
            // The server applies the chat template; we never tokenize.
            const chat = await client.chat({ messages: ctx.messages, max_tokens, temperature, top_p, seed: turnSeed(seed, input.turn), n: 1, ...simLength() }, { signal });
            prompt = chat.prompt_token_ids;
            generation = await finishFirstTurn(more, prompt, max_tokens, chat.choices[0]!);
          } else {
            // Later turns: the exact ids held so far, plus only the new turn's ids (earlier turns are never re-tokenized).
            const next = await client.continuation({ history: ctx.messages.slice(0, -1), messages: ctx.messages.slice(-1) }, { signal });
            prompt = [...ctx.prompt_ids, ...ctx.response_ids, ...next.token_ids];
            generation = await generateToCompletion(more.complete, prompt, max_tokens);
          }
        } finally {
          lease.release();
        }
        return storeTurn(deps, input.contextKey, ctx, prompt, generation, input.turn, more.text);
      }).then((summary) => guardResult('generateTurn', summary, deps.maxResultBytes));
    },

    /**
     * The group's first (only) turn as one request with n = G choices on one
     * server (prompt replication off, as ROLL's is_num_return_sequences_expand
     * = false). A choice cut by a weight sync continues on its own from its
     * partial tokens. Each choice becomes its own trajectory context.
     */
    async generateGroupTurn(input: GenerateGroupInput): Promise<TurnSummary[]> {
      const { max_tokens, temperature, top_p, seed } = input.sampling;
      const simLength = simLengthFor(input.generation, max_tokens);
      const messages: ChatMessage[] = [{ role: 'user', content: input.observation }];
      return withHeartbeat(async (signal) => {
        const lease = deps.pool.acquire(input.affinity);
        const client = deps.inference.get(lease.url)!;
        try {
          const chat = await client.chat({ messages, max_tokens, temperature, top_p, seed, n: input.contextKeys.length, ...simLength() }, { signal });
          return await Promise.all(
            chat.choices.map(async (choice, i) => {
              const more = continuations(client, input.sampling, (attempt) => choiceSeed(seed, i, attempt), simLength, signal);
              const generation = await finishFirstTurn(more, chat.prompt_token_ids, max_tokens, choice);
              const ctx = emptyContext();
              ctx.messages.push(...messages);
              return storeTurn(deps, input.contextKeys[i]!, ctx, chat.prompt_token_ids, generation, 0, more.text);
            }),
          );
        } finally {
          lease.release();
        }
      }).then((summaries) => guardResult('generateGroupTurn', summaries, deps.maxResultBytes));
    },

    /** Writes the finished trajectory as one training sample; returns its key and the summary the group needs. */
    async finishTrajectory(input: { contextKey: string; sampleKey: string; uid: string; groupId: string; reward: number }) {
      const ctx = await deps.store.get<TrajectoryContext>(input.contextKey);
      const sample: Sample = {
        uid: input.uid,
        group_id: input.groupId,
        prompt_ids: ctx.prompt_ids,
        response_ids: ctx.response_ids,
        old_logprobs: ctx.old_logprobs,
        reward: input.reward,
        loss_mask: ctx.loss_mask,
        version_spans: ctx.version_spans,
      };
      await deps.store.put(input.sampleKey, sample);
      const versions = ctx.version_spans.map((s) => s.version);
      return {
        sampleKey: input.sampleKey,
        tokens: ctx.response_ids.length,
        minVersion: versions.length ? Math.min(...versions) : -1,
        maxVersion: versions.length ? Math.max(...versions) : -1,
        versionsSpanned: new Set(versions).size,
        aborts: ctx.aborts,
      };
    },
  };
}

const emptyContext = (): TrajectoryContext => ({ messages: [], prompt_ids: [], response_ids: [], old_logprobs: [], loss_mask: [], version_spans: [], aborts: 0 });

/**
 * The calls that continue a generation after an abort (from its partial
 * tokens, under the new weights), gathering the text they add. `text` starts
 * empty; finishFirstTurn seeds it with the first request's text.
 */
function continuations(client: InferenceClient, s: Sampling, seedOf: (attempt: number) => number, simLength: SimLength, signal: AbortSignal) {
  const more = {
    text: '',
    async complete(call: CompletionCall): Promise<Completion> {
      const r = await client.complete({ prompt: call.prompt, max_tokens: call.max_tokens, temperature: s.temperature, top_p: s.top_p, seed: seedOf(call.attempt), ...simLength(call) }, { signal });
      more.text += r.choices[0]!.text ?? '';
      return r.choices[0]!;
    },
  };
  return more;
}

/** The generated turn joins the context (tokens, then the assistant's message), the context is stored, and the workflow gets a summary. */
async function storeTurn(deps: ActivityDeps, key: string, ctx: TrajectoryContext, prompt: number[], g: Generation, turn: number, text: string): Promise<TurnSummary> {
  appendTurn(ctx, prompt, g, turn);
  ctx.messages.push({ role: 'assistant', content: text });
  await deps.store.put(key, ctx);
  return { action: text, tokens: g.token_ids.length, finish_reason: g.finish_reason, aborts: g.aborts, versions: [...new Set(g.version_spans.map((s) => s.version))] };
}

/**
 * The request field for an env-set natural length: the whole length on the
 * first request, what is left of it on a continuation (a call after an
 * abort asks for the remaining max_tokens, so the tokens already held are
 * max_tokens − call.max_tokens).
 */
type SimLength = (call?: CompletionCall) => { sim_response_length?: number };

function simLengthFor(generation: EpisodeGeneration | undefined, maxTokens: number): SimLength {
  const length = generation?.sim_response_length;
  return (call) =>
    length === undefined ? {} : { sim_response_length: Math.max(1, length - (call ? maxTokens - call.max_tokens : 0)) };
}

type ChatChoice = Awaited<ReturnType<InferenceClient['chat']>>['choices'][number];

/** A chat choice as a complete generation: one cut by a weight sync (abort) continues from its partial tokens. */
function finishFirstTurn(more: ReturnType<typeof continuations>, prompt: number[], maxTokens: number, choice: ChatChoice): Promise<Generation> {
  more.text = choice.message.content ?? '';
  const partial: Generation = { token_ids: choice.token_ids, logprobs: choice.logprobs, finish_reason: 'length', version_spans: choice.version_spans, aborts: 1 };
  return choice.finish_reason === 'abort' ? generateToCompletion(more.complete, prompt, maxTokens, { partial }) : Promise.resolve({ ...partial, aborts: 0, finish_reason: choice.finish_reason });
}

/** Adds one turn to the context, keeping token ids end to end across turns. */
function appendTurn(ctx: TrajectoryContext, prompt: number[], g: Generation, turn: number): void {
  if (turn === 0) {
    ctx.prompt_ids = prompt;
  } else {
    // The prompt was built as held ids + continuation ids; guard the invariant that training relies on.
    const held = [...ctx.prompt_ids, ...ctx.response_ids];
    if (prompt.length < held.length || held.some((t, i) => prompt[i] !== t)) {
      throw new TokenizationDriftError(`turn ${turn}: the prompt does not extend the ids already held; continuing would train on tokens the model never saw`);
    }
    const envTokens = prompt.slice(held.length);
    ctx.response_ids.push(...envTokens);
    ctx.old_logprobs.push(...envTokens.map(() => 0));
    ctx.loss_mask.push(...envTokens.map(() => 0 as const));
  }
  const offset = ctx.response_ids.length;
  ctx.response_ids.push(...g.token_ids);
  ctx.old_logprobs.push(...g.logprobs);
  ctx.loss_mask.push(...g.token_ids.map(() => 1 as const));
  ctx.version_spans.push(...g.version_spans.map((s) => ({ version: s.version, start: s.start + offset, end: s.end + offset })));
  ctx.aborts += g.aborts;
}
