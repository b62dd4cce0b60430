/**
 * trajectory: one sample / episode (the EnvManager's per-env loop).
 * env reset -> {generate, env step}* -> write the sample -> a small summary.
 * A single-turn task is the one-turn case of the same loop.
 *
 * The loop is built from three steps over a plain `Episode` record
 * (startEpisode, generateFor + stepEnv, finishEpisode) so the lockstep
 * baseline (lockstep.ts) runs exactly the same calls, only with a barrier
 * across the batch between them.
 */
import { patched, proxyActivities, proxyLocalActivities, setCurrentDetails, type ActivityInterfaceFor } from '@temporalio/workflow';
import type { Activities, GenerateTurnInput, Sampling, StepResult, TurnSummary } from '../activities';
import type { EpisodeGeneration } from '../envs/env';
import { contextKey, type EnvLossPolicy, type RoleQueues, sampleKey } from '../core';
import type { EnvSpec } from './env-spec';
import type { ChatMessage } from '../gpu-bridge';
import { ENV, GENERATE, LOCAL_ENV, LOCAL_STORE, STORE, TURN } from './activity-options';
import { numericInfo } from './env-info';
import { isEnvSessionLost } from './failure';
import { roleActivities } from './routing';
import { envStepSummary, finishSummary, generateSummary, ofTrajectory, playTurnSummary, recordEnvStep, recordReset, recordReward, recordTurn, transcriptDetails } from './metadata';

/**
 * The env and store calls of an episode: activities, or local activities (custom_envs.<tag>.env_calls; see
 * episodeCalls). With `playTurn`, each turn's generation and env step are one activity (env_calls turn); the
 * lockstep baseline, which needs a barrier between them, and a one-request group's first step use envStep still.
 */
export type EpisodeCalls = Pick<ActivityInterfaceFor<Activities>, 'envReset' | 'envStep' | 'finishTrajectory'> & Partial<Pick<ActivityInterfaceFor<Activities>, 'playTurn'>>;
// (Activity proxies have no own keys, so each call is picked by name, not spread.)
const env = proxyActivities<Activities>(ENV);
const store = proxyActivities<Activities>(STORE);
export const ACTIVITY_CALLS: EpisodeCalls = { envReset: env.envReset, envStep: env.envStep, finishTrajectory: store.finishTrajectory };
const localEnv = proxyLocalActivities<Activities>(LOCAL_ENV);
const localStore = proxyLocalActivities<Activities>(LOCAL_STORE);
export const LOCAL_CALLS: EpisodeCalls = { envReset: localEnv.envReset, envStep: localEnv.envStep, finishTrajectory: localStore.finishTrajectory };
const turnCalls = proxyActivities<Activities>(TURN);
/**
 * env_calls turn: each turn one activity, the reset and the sample write local activities (a marker each in the
 * trajectory's history, no task of their own), so a trajectory of T turns makes T activity tasks, not 2T + 2.
 */
export const TURN_CALLS: EpisodeCalls = { envReset: localEnv.envReset, envStep: env.envStep, finishTrajectory: localStore.finishTrajectory, playTurn: turnCalls.playTurn };

/** The env calls on the env role's queue (temporal.route_by_role), the sample write on the run's. */
function routedCalls(queues: RoleQueues): EpisodeCalls {
  const routedEnv = roleActivities(ENV, 'env', queues);
  return { envReset: routedEnv.envReset, envStep: routedEnv.envStep, finishTrajectory: store.finishTrajectory };
}

export interface TrajectoryInput {
  runId: string;
  uid: string;
  groupId: string;
  /** Index in the group (0 … G−1): members share the env seed, and the env may draw per member. */
  member: number;
  env: EnvSpec;
  envSeed: number;
  sampling: Sampling;
  /** The run's role task queues (RunPlan.queues); absent when it does not route by role. */
  queues?: RoleQueues;
}

export interface TrajectorySummary {
  uid: string;
  sampleKey: string;
  reward: number;
  turns: number;
  tokens: number;
  minVersion: number;
  maxVersion: number;
  versionsSpanned: number;
  aborts: number;
  /** Env sessions rebuilt by replay, and times the episode started over (on_env_loss); absent in summaries from before them. */
  envReplays?: number;
  envRestarts?: number;
  /** The numbers of the episode's last env info (env-info.ts); absent when the env reported none. */
  envInfo?: Record<string, number>;
}

/** Where one episode stands between calls; plain JSON (the lockstep workflow carries it across continue-as-new). */
export interface Episode {
  state: unknown;
  observation: string;
  /** The reset's chat messages (EnvReset.messages): turn 0's prompt in place of the observation. */
  messages?: ChatMessage[];
  reward: number;
  turns: number;
  done: boolean;
  /** What the env asked of this episode's generations (EnvReset.generation). */
  generation?: EpisodeGeneration;
  /** The env's declared on_env_loss (EnvReset.onLoss). */
  onLoss?: EnvLossPolicy;
  /** Env sessions rebuilt by replay, and times the episode started over; absent = 0. */
  replays?: number;
  restarts?: number;
  /** Tokens generated so far, kept only under an episode token budget (EnvSpec.maxEpisodeTokens). */
  tokens?: number;
  /** The numbers of the latest env step's info (env-info.ts), reported with the trajectory. */
  envInfo?: Record<string, number>;
}

/**
 * Restarts of one episode (on_env_loss restart) before its trajectory fails
 * as an infrastructure failure: a server that loses every session (a
 * session_ttl_s shorter than a turn) would otherwise restart it forever.
 */
const MAX_ENV_RESTARTS = 3;

const envInput = (input: TrajectoryInput) => ({ envType: input.env.type, envConfig: input.env.config });

/** The workflow's trajectories, readable in the UI as its current details (metadata.ts). */
const publishTranscripts = (): void => setCurrentDetails(transcriptDetails());

export async function startEpisode(input: TrajectoryInput, calls: EpisodeCalls = ACTIVITY_CALLS): Promise<Episode> {
  const { state, observation, messages, generation, onLoss } = await calls.envReset.executeWithOptions({ summary: `${input.uid} · ${input.env.type} · seed ${input.envSeed}` }, [{ ...envInput(input), seed: input.envSeed, sample: input.member }]);
  recordReset(input.uid, input.env.type, observation);
  publishTranscripts();
  return { state, observation, ...(messages ? { messages } : {}), reward: 0, turns: 0, done: false, ...(generation ? { generation } : {}), ...(onLoss ? { onLoss } : {}) };
}

/** The generation's input for the episode's next turn: its sampling capped by what is left of a token budget. */
function generateInput(input: TrajectoryInput, ep: Episode): GenerateTurnInput {
  const budget = input.env.maxEpisodeTokens;
  const sampling = budget === undefined ? input.sampling : { ...input.sampling, max_tokens: Math.min(input.sampling.max_tokens, budget - (ep.tokens ?? 0)) };
  return {
    contextKey: contextKey(input.runId, input.uid),
    observation: ep.observation,
    ...(ep.turns === 0 && ep.messages ? { messages: ep.messages } : {}),
    turn: ep.turns,
    sampling,
    affinity: input.uid,
    runId: input.runId,
    ...(ep.generation ? { generation: ep.generation } : {}),
  };
}

/** The model's answer to the episode's latest observation. */
export function generateFor(input: TrajectoryInput, ep: Episode): Promise<TurnSummary> {
  const { generateTurn } = roleActivities(GENERATE, 'inference', input.queues);
  const args = generateInput(input, ep);
  return generateTurn.executeWithOptions({ summary: ofTrajectory(input.uid, generateSummary(ep.turns, args.sampling.max_tokens)) }, [args]);
}

/** Applies the model's action to the env; the episode is done when the env says so, or the turns or its token budget run out. */
export async function stepEnv(input: TrajectoryInput, ep: Episode, turn: Pick<TurnSummary, 'action' | 'tokens' | 'versions'>, calls: EpisodeCalls = ACTIVITY_CALLS): Promise<Episode> {
  const { action } = turn;
  const onLoss = input.env.onLoss ?? ep.onLoss;
  recordTurn(input.uid, turn);
  publishTranscripts();
  let step;
  try {
    step = await calls.envStep.executeWithOptions({ summary: ofTrajectory(input.uid, envStepSummary(ep.turns, action)) }, [{ ...envInput(input), state: ep.state, action, ...(onLoss ? { onLoss } : {}) }]);
  } catch (err) {
    if (isRestartable(input, ep, err)) return restartEpisode(input, ep, calls);
    throw err;
  }
  return afterStep(input, ep, turn, step);
}

/**
 * A turn as one activity (env_calls turn): the generation and its env step in one call. The UI's transcript gets
 * the turn's action with its observation, when the call returns; the activity's summary says which turn runs.
 */
async function playTurn(input: TrajectoryInput, ep: Episode, play: NonNullable<EpisodeCalls['playTurn']>, calls: EpisodeCalls): Promise<Episode> {
  const onLoss = input.env.onLoss ?? ep.onLoss;
  const generate = generateInput(input, ep);
  let played;
  try {
    played = await play.executeWithOptions({ summary: ofTrajectory(input.uid, playTurnSummary(ep.turns, generate.sampling.max_tokens)) }, [{ generate, step: { ...envInput(input), state: ep.state, ...(onLoss ? { onLoss } : {}) } }]);
  } catch (err) {
    if (isRestartable(input, ep, err)) return restartEpisode(input, ep, calls);
    throw err;
  }
  recordTurn(input.uid, played.turn);
  return afterStep(input, ep, played.turn, played.step);
}

/** Under on_env_loss restart, a lost env session starts the episode over, at most MAX_ENV_RESTARTS times. */
function isRestartable(input: TrajectoryInput, ep: Episode, err: unknown): boolean {
  const onLoss = input.env.onLoss ?? ep.onLoss;
  // (patched: the restart is a new command sequence; no history before it can hold an EnvSessionLostError.)
  return onLoss === 'restart' && isEnvSessionLost(err) && (ep.restarts ?? 0) < MAX_ENV_RESTARTS && patched('env-loss-restart');
}

/** The episode after an env step: the step's state and reward, and done when the env says so, or the turns or the token budget run out. */
function afterStep(input: TrajectoryInput, ep: Episode, turn: Pick<TurnSummary, 'tokens'>, step: StepResult): Episode {
  const turns = ep.turns + 1;
  const replays = (ep.replays ?? 0) + (step.replayed ? 1 : 0);
  const budget = input.env.maxEpisodeTokens;
  const tokens = budget === undefined ? undefined : (ep.tokens ?? 0) + turn.tokens;
  const spent = tokens !== undefined && tokens >= budget!;
  const envInfo = numericInfo(step.info);
  recordEnvStep(input.uid, step);
  publishTranscripts();
  return { ...ep, ...(envInfo ? { envInfo } : {}), state: step.state, observation: step.observation, reward: ep.reward + step.reward, turns, done: step.done || turns >= input.env.maxTurns || spent, ...(replays ? { replays } : {}), ...(tokens !== undefined ? { tokens } : {}) };
}

/**
 * on_env_loss restart: the episode starts over from turn 0 on a fresh env
 * session. Its generated turns are discarded: the next turn is turn 0 again,
 * which starts the trajectory's context afresh, so nothing of the lost
 * episode reaches the sample.
 */
async function restartEpisode(input: TrajectoryInput, lost: Episode, calls: EpisodeCalls): Promise<Episode> {
  const fresh = await startEpisode(input, calls);
  return { ...fresh, restarts: (lost.restarts ?? 0) + 1, ...(lost.replays ? { replays: lost.replays } : {}) };
}

/** Generate and step until the episode is done (an episode already done makes no call). */
export async function playOut(input: TrajectoryInput, start: Episode, calls: EpisodeCalls): Promise<Episode> {
  let ep = start;
  while (!ep.done && ep.turns < input.env.maxTurns) {
    ep = calls.playTurn ? await playTurn(input, ep, calls.playTurn, calls) : await stepEnv(input, ep, await generateFor(input, ep), calls);
  }
  return ep;
}

export async function finishEpisode(input: TrajectoryInput, ep: Episode, calls: EpisodeCalls = ACTIVITY_CALLS): Promise<TrajectorySummary> {
  const done = await calls.finishTrajectory.executeWithOptions({ summary: finishSummary(input.uid, ep.reward) }, [
    { contextKey: contextKey(input.runId, input.uid), sampleKey: sampleKey(input.runId, input.uid), uid: input.uid, groupId: input.groupId, reward: ep.reward },
  ]);
  recordReward(input.uid, ep.reward);
  publishTranscripts();
  return { uid: input.uid, reward: ep.reward, turns: ep.turns, ...done, envReplays: ep.replays ?? 0, envRestarts: ep.restarts ?? 0, ...(ep.envInfo ? { envInfo: ep.envInfo } : {}) };
}

/**
 * The calls an env's settings ask for, where `auto` resolves to `whenAuto`. A run that routes by role calls its
 * env servers from workers beside them, so never as local activities (the config refuses env_calls local there),
 * nor in a turn activity (the generation runs beside the inference server, the step beside the env server).
 */
export function episodeCalls(env: EnvSpec, whenAuto: 'activity' | 'local' | 'turn', queues?: RoleQueues): EpisodeCalls {
  if (queues) return routedCalls(queues);
  const kind = env.calls === undefined || env.calls === 'auto' ? whenAuto : env.calls;
  return kind === 'local' ? LOCAL_CALLS : kind === 'turn' ? TURN_CALLS : ACTIVITY_CALLS;
}

/** What `auto` means in a trajectory workflow: a turn activity, since the patch; separate activities in histories from before it. */
const autoInTrajectory = (input: TrajectoryInput): 'activity' | 'turn' => {
  const auto = input.env.calls === undefined || input.env.calls === 'auto';
  return auto && !input.queues && patched('turn-activity') ? 'turn' : 'activity';
};

export async function trajectory(input: TrajectoryInput): Promise<TrajectorySummary> {
  const calls = episodeCalls(input.env, autoInTrajectory(input), input.queues);
  return finishEpisode(input, await playOut(input, await startEpisode(input, calls), calls), calls);
}
