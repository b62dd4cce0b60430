/**
 * Rollout activities (the EnvManager's loop body): env reset/step, one
 * generation turn, and the finished sample. Token arrays live in the sample
 * store; workflows pass keys and get small summaries back.
 */
import { Context } from '@temporalio/activity';
import { NON_RETRYABLE_ENGINE_ERRORS, TokenizationDriftError, type ChatMessage, type Generation, type VersionSpan } from '../gpu-bridge';
import { choiceSeed, ENV_STEP_ATTEMPTS, EnvStepAttemptsExhaustedError, type EnvLossPolicy, NON_RETRYABLE_ACTIVITY_ERRORS, turnSeed } from '../core';
import type { Sample } from '../gpu-bridge/contracts/trainer';
import { resolveEnv } from '../envs';
import type { EnvStep, EpisodeGeneration } from '../envs/env';
import { EnvSessionLostError, NON_RETRYABLE_ENV_ERRORS } from '../envs/errors';
import { getIfPresent } from '../store';
import type { ActivityDeps } from './deps';
import { completeChoice, newProgress, onAnyServer, simLengthFor, streamChat, type GenerationProgress, type GenerationRequest, type Sampling } from './generation';
import { withHeartbeat, withProgress } from './heartbeat';
import { acrossOutages } from './engine-wait';
import { guardResult } from './payload';

export type { Sampling };

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
  /**
   * The last turn stored, what it returned, and the activity attempt and call (a turn activity's run/activity id)
   * that stored it (both absent before turn activities existed): a retry of that turn returns it again instead of
   * appending it twice.
   */
  last_turn?: { turn: number; summary: TurnSummary; attempt?: number; call?: string };
}

export interface GenerateTurnInput {
  contextKey: string;
  observation: string;
  /** Turn 0's chat messages (EnvReset.messages), sent in place of one user message of `observation`; absent in activities scheduled before it existed. */
  messages?: ChatMessage[];
  turn: number;
  sampling: Sampling;
  /** Keeps a trajectory's turns on one server. */
  affinity: string;
  /** What the env asked of this episode's generations (EnvReset.generation). */
  generation?: EpisodeGeneration;
  /** Whose latest weights every request asks for at least (absent in activities scheduled before it existed: no minimum). */
  runId?: string;
}

/** One request for a whole group (no prompt replication): the G samples of a single-turn prompt. */
export interface GenerateGroupInput {
  contextKeys: string[];
  observation: string;
  /** The prompt's chat messages (EnvReset.messages), in place of one user message of `observation`. */
  messages?: ChatMessage[];
  sampling: Sampling;
  affinity: string;
  /** Shared by every choice of the request. */
  generation?: EpisodeGeneration;
  runId?: string;
}

export interface TurnSummary {
  action: string;
  tokens: number;
  finish_reason: 'stop' | 'length';
  aborts: number;
  /** Calls continued on another server after theirs was lost. */
  failovers: number;
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
      const reset = await withHeartbeat((signal) => acrossOutages('env', deps.env, signal, () => env.reset(env.parseConfig(input.envConfig), input.seed, signal, input.sample)));
      return guardResult('envReset', reset, deps.maxResultBytes);
    },

    /** One env step (stepOnce); `attempt` counts this step's retries. */
    async envStep(input: EnvStepInput): Promise<StepResult> {
      return stepOnce(deps, input, Context.current().info.attempt - 1);
    },

    /** One turn's generation (generateOnce). */
    async generateTurn(input: GenerateTurnInput): Promise<TurnSummary> {
      return (await generateOnce(deps, input)).summary;
    },

    /**
     * A turn as one activity (env_calls turn): the generation, then the env step applied to its action. Each half
     * keeps its own retry safety, so a retry after any crash redoes nothing: a turn already stored is returned from
     * the context (last_turn), and a step already applied is answered from the env server's record of its index.
     * The step's retries are counted from the attempt that stored the turn, and get ENV_STEP_ATTEMPTS, as an envStep
     * activity's do; the activity's own policy retries without limit, as a generation's does.
     */
    async playTurn(input: { generate: GenerateTurnInput; step: Omit<EnvStepInput, 'action'> }): Promise<{ turn: TurnSummary; step: StepResult }> {
      const info = Context.current().info;
      const { summary: turn, attempt: storedAt } = await generateOnce(deps, input.generate, `${info.workflowExecution?.runId}/${info.activityId}`);
      const attempt = info.attempt - storedAt;
      try {
        return { turn, step: await stepOnce(deps, { ...input.step, action: turn.action }, attempt) };
      } catch (e) {
        if (attempt + 1 < ENV_STEP_ATTEMPTS || STEP_FINAL.has((e as Error).name)) throw e; // a final failure keeps its own type
        throw new EnvStepAttemptsExhaustedError(`the env step of turn ${input.generate.turn} failed ${attempt + 1} times: ${(e as Error).message}`);
      }
    },

    /**
     * The group's first (only) turn as one request with n = G choices on one
     * server (prompt replication off, as ROLL's is_num_return_sequences_expand
     * = false). A choice cut short (a weight sync, a lost server) continues on
     * its own from its partial tokens. Each choice becomes its own trajectory context.
     */
    async generateGroupTurn(input: GenerateGroupInput): Promise<TurnSummary[]> {
      const messages = turnMessages({ ...input, turn: 0 });
      const seed = input.sampling.seed;
      return withProgress<TurnSummary[], GenerationProgress>(async (signal, report, resumed) => {
        const r = await generationRequest(deps, input, signal, report);
        const progress = resumed ?? newProgress(input.contextKeys.length);
        if (!progress.prompt) await streamChat(r, progress, messages, seed);
        const generations = await Promise.all(progress.choices.map((_, i) => completeChoice(r, progress, i, (call) => choiceSeed(seed, i, call))));
        return Promise.all(
          generations.map((generation, i) => {
            const ctx = emptyContext();
            ctx.messages.push(...messages);
            return storeTurn(deps, input.contextKeys[i]!, ctx, progress.prompt!, generation, 0, Context.current().info.attempt);
          }),
        );
      }, deps.heartbeatPartialTokens).then((summaries) => guardResult('generateGroupTurn', summaries, deps.maxResultBytes));
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

/** What an env step throws that no retry fixes (activity-options.ts names the same for every policy): it fails the turn as it is. */
const STEP_FINAL = new Set([...NON_RETRYABLE_ENV_ERRORS, ...NON_RETRYABLE_ENGINE_ERRORS, ...NON_RETRYABLE_ACTIVITY_ERRORS]);

export type EnvStepInput = EnvInput & { state: unknown; action: string; onLoss?: EnvLossPolicy };
export type StepResult = EnvStep<unknown> & { replayed?: true };

/**
 * One env step; while the env server cannot be reached it is waited for (engine-wait.ts). A lost env session under
 * on_env_loss replay (also the default, so workflows that pass no policy behave as before it existed) is rebuilt
 * here and the step applied to it (`replayed`); under restart or drop the EnvSessionLostError goes to the
 * workflow, which decides.
 */
async function stepOnce(deps: ActivityDeps, input: EnvStepInput, attempt: number): Promise<StepResult> {
  const env = resolveEnv(input.envType, deps.env);
  const config = env.parseConfig(input.envConfig);
  const step = await withHeartbeat((signal) =>
    acrossOutages('env', deps.env, signal, async (): Promise<StepResult> => {
      try {
        return await env.step(config, input.state, input.action, signal, attempt);
      } catch (e) {
        if (!(e instanceof EnvSessionLostError) || (input.onLoss ?? 'replay') !== 'replay' || !env.rebuild) throw e;
        const state = await env.rebuild(config, input.state, signal);
        return { ...(await env.step(config, state, input.action, signal, attempt)), replayed: true };
      }
    }),
  );
  return guardResult('envStep', step, deps.maxResultBytes);
}

/**
 * One turn's generation: the server applies the chat template to the conversation so far (we never tokenize),
 * generation runs to completion across weight updates, lost servers and retries (continuing from the tokens so
 * far), and the context grows by the env's tokens (masked) and the generated ones.
 */
async function generateOnce(deps: ActivityDeps, input: GenerateTurnInput, call?: string): Promise<{ summary: TurnSummary; attempt: number }> {
  // After turn 0 the context must exist; at turn 0 only a turn activity's retry can find one (none before its first store).
  let stored: TrajectoryContext | undefined;
  if (input.turn > 0) stored = await deps.store.get<TrajectoryContext>(input.contextKey);
  else if (call) stored = await getIfPresent<TrajectoryContext>(deps.store, input.contextKey);
  // This turn was stored but its attempt never reported (the worker died): appending it again would corrupt the context,
  // and in a turn activity the step may have been applied with its action already. Turn 0 is the same turn only within
  // one call: an episode started over (on_env_loss restart) generates its turn 0 afresh.
  const last = stored?.last_turn;
  if (last?.turn === input.turn && (input.turn > 0 || last.call === call)) return { summary: last.summary, attempt: last.attempt ?? 1 };
  const ctx = input.turn > 0 ? stored! : emptyContext();
  const attempt = Context.current().info.attempt;
  ctx.messages.push(...turnMessages(input, ctx.messages));
  const seed = input.sampling.seed;
  return withProgress<TurnSummary, GenerationProgress>(async (signal, report, resumed) => {
    const r = await generationRequest(deps, input, signal, report);
    const progress = resumed ?? newProgress(1);
    if (!progress.prompt && input.turn === 0) await streamChat(r, progress, ctx.messages, turnSeed(seed, input.turn));
    if (!progress.prompt) {
      // Later turns: the exact ids held so far, plus only the new turn's ids (earlier turns are never re-tokenized).
      const next = await onAnyServer(r, (client) => client.continuation({ history: ctx.messages.slice(0, -1), messages: ctx.messages.slice(-1) }, { signal }));
      progress.prompt = [...ctx.prompt_ids, ...ctx.response_ids, ...next.token_ids];
      report(progress);
    }
    const generation = await completeChoice(r, progress, 0, () => turnSeed(seed, input.turn));
    return storeTurn(deps, input.contextKey, ctx, progress.prompt, generation, input.turn, attempt, call);
  }, deps.heartbeatPartialTokens).then((summary) => ({ summary: guardResult('generateTurn', summary, deps.maxResultBytes), attempt }));
}

/**
 * What a turn adds to the conversation `history`: at turn 0 the env's own chat messages, else the env's observation as
 * one message of observationRole(history).
 */
const turnMessages = (input: Pick<GenerateTurnInput, 'observation' | 'messages' | 'turn'>, history: ChatMessage[] = []): ChatMessage[] =>
  input.turn === 0 && input.messages ? input.messages : [{ role: observationRole(history), content: input.observation }];

/**
 * The role of an env's observation in a conversation: `tool` when the conversation opens with a tools message (the env
 * handed the model tools, swe_lite and swe with actions: tool_calls, so what it answers is the result of the model's
 * call, which the chat template renders as one: Qwen2.5's `<tool_response>` in a user turn), else `user`, as before
 * tools existed. Read from the conversation itself, so no workflow carries a new field and every other env is unchanged.
 */
export const observationRole = (history: ChatMessage[]): 'tool' | 'user' => (history[0]?.role === TOOLS_ROLE ? 'tool' : 'user');
/** The role of the leading message that holds the tools (python-engines models/chat.py TOOLS_ROLE). */
export const TOOLS_ROLE = 'tools';

const emptyContext = (): TrajectoryContext => ({ messages: [], prompt_ids: [], response_ids: [], old_logprobs: [], loss_mask: [], version_spans: [], aborts: 0 });

/** The settings of one generate attempt; the run's latest weights are read once per attempt. */
async function generationRequest(deps: ActivityDeps, input: GenerateTurnInput | GenerateGroupInput, signal: AbortSignal, report: (p: GenerationProgress) => void): Promise<GenerationRequest> {
  const latest = input.runId === undefined ? undefined : await deps.weights.read(input.runId);
  return { deps, affinity: input.affinity, sampling: input.sampling, minVersion: latest?.version, simLength: simLengthFor(input.generation, input.sampling.max_tokens), signal, report };
}

/** The generated turn joins the context (tokens, then the assistant's message), the context is stored, and the workflow gets a summary. */
async function storeTurn(deps: ActivityDeps, key: string, ctx: TrajectoryContext, prompt: number[], g: Generation, turn: number, attempt: number, call?: string): Promise<TurnSummary> {
  appendTurn(ctx, prompt, g, turn);
  ctx.messages.push({ role: 'assistant', content: g.text });
  const summary: TurnSummary = { action: g.text, tokens: g.token_ids.length, finish_reason: g.finish_reason, aborts: g.aborts, failovers: g.failovers, versions: [...new Set(g.version_spans.map((s) => s.version))] };
  ctx.last_turn = { turn, summary, attempt, ...(call ? { call } : {}) };
  await deps.store.put(key, ctx);
  return summary;
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
