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
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities, Sampling, TurnSummary } from '../activities';
import type { EpisodeGeneration } from '../envs/env';
import { ENV, GENERATE, LOCAL_ENV, LOCAL_STORE, STORE } from './activity-options';
import { contextKey, sampleKey } from './ids';

const { generateTurn } = proxyActivities<Activities>(GENERATE);

/** The env and store calls of an episode: activities, or local activities (custom_envs.<tag>.env_calls; see episodeCalls). */
export type EpisodeCalls = Pick<Activities, 'envReset' | 'envStep' | 'finishTrajectory'>;
// (Activity proxies have no own keys, so each call is picked by name, not spread.)
const env = proxyActivities<Activities>(ENV);
const store = proxyActivities<Activities>(STORE);
export const ACTIVITY_CALLS: EpisodeCalls = { envReset: env.envReset, envStep: env.envStep, finishTrajectory: store.finishTrajectory };
const localEnv = proxyLocalActivities<Activities>(LOCAL_ENV);
const localStore = proxyLocalActivities<Activities>(LOCAL_STORE);
export const LOCAL_CALLS: EpisodeCalls = { envReset: localEnv.envReset, envStep: localEnv.envStep, finishTrajectory: localStore.finishTrajectory };

export interface EnvSpec {
  type: string;
  config: Record<string, unknown>;
  maxTurns: number;
  /** custom_envs.<tag>.env_calls; absent = auto. */
  calls?: 'auto' | 'activity' | 'local';
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
}

/** Where one episode stands between calls; plain JSON (the lockstep workflow carries it across continue-as-new). */
export interface Episode {
  state: unknown;
  observation: string;
  reward: number;
  turns: number;
  done: boolean;
  /** What the env asked of this episode's generations (EnvReset.generation). */
  generation?: EpisodeGeneration;
}

const envInput = (input: TrajectoryInput) => ({ envType: input.env.type, envConfig: input.env.config });

export async function startEpisode(input: TrajectoryInput, calls: EpisodeCalls = ACTIVITY_CALLS): Promise<Episode> {
  const { state, observation, generation } = await calls.envReset({ ...envInput(input), seed: input.envSeed, sample: input.member });
  return { state, observation, reward: 0, turns: 0, done: false, ...(generation ? { generation } : {}) };
}

/** The model's answer to the episode's latest observation. */
export function generateFor(input: TrajectoryInput, ep: Episode): Promise<TurnSummary> {
  return generateTurn({ contextKey: contextKey(input.runId, input.uid), observation: ep.observation, turn: ep.turns, sampling: input.sampling, affinity: input.uid, runId: input.runId, ...(ep.generation ? { generation: ep.generation } : {}) });
}

/** Applies the model's action to the env; the episode is done when the env says so or the turns run out. */
export async function stepEnv(input: TrajectoryInput, ep: Episode, action: string, calls: EpisodeCalls = ACTIVITY_CALLS): Promise<Episode> {
  const step = await calls.envStep({ ...envInput(input), state: ep.state, action });
  const turns = ep.turns + 1;
  return { ...ep, state: step.state, observation: step.observation, reward: ep.reward + step.reward, turns, done: step.done || turns >= input.env.maxTurns };
}

export async function finishEpisode(input: TrajectoryInput, ep: Episode, calls: EpisodeCalls = ACTIVITY_CALLS): Promise<TrajectorySummary> {
  const done = await calls.finishTrajectory({ contextKey: contextKey(input.runId, input.uid), sampleKey: sampleKey(input.runId, input.uid), uid: input.uid, groupId: input.groupId, reward: ep.reward });
  return { uid: input.uid, reward: ep.reward, turns: ep.turns, ...done };
}

/** The calls an env's settings ask for, where `auto` resolves to `whenAuto`. */
export function episodeCalls(env: EnvSpec, whenAuto: 'activity' | 'local'): EpisodeCalls {
  const kind = env.calls === undefined || env.calls === 'auto' ? whenAuto : env.calls;
  return kind === 'local' ? LOCAL_CALLS : ACTIVITY_CALLS;
}

export async function trajectory(input: TrajectoryInput): Promise<TrajectorySummary> {
  const calls = episodeCalls(input.env, 'activity');
  let ep = await startEpisode(input, calls);
  while (!ep.done && ep.turns < input.env.maxTurns) {
    const turn = await generateFor(input, ep);
    ep = await stepEnv(input, ep, turn.action, calls);
  }
  return finishEpisode(input, ep, calls);
}
