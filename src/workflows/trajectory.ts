/**
 * trajectory: one sample / episode (the EnvManager's per-env loop).
 * env reset -> {generate, env step}* -> write the sample -> a small summary.
 * A single-turn task is the one-turn case of the same loop.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities, Sampling } from '../activities';
import { ENV, GENERATE, STORE } from './activity-options';

const { envReset, envStep } = proxyActivities<Activities>(ENV);
const { generateTurn } = proxyActivities<Activities>(GENERATE);
const { finishTrajectory } = proxyActivities<Activities>(STORE);

export interface EnvSpec {
  type: string;
  config: Record<string, unknown>;
  maxTurns: number;
}

export interface TrajectoryInput {
  runId: string;
  uid: string;
  groupId: string;
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

export async function trajectory(input: TrajectoryInput): Promise<TrajectorySummary> {
  const envIn = { envType: input.env.type, envConfig: input.env.config };
  const contextKey = `${input.runId}/trajectories/${input.uid}.json`;
  let { state, observation } = await envReset({ ...envIn, seed: input.envSeed });
  let reward = 0;
  let turns = 0;
  while (turns < input.env.maxTurns) {
    const turn = await generateTurn({ contextKey, observation, turn: turns, sampling: input.sampling, affinity: input.uid });
    const step = await envStep({ ...envIn, state, action: turn.action });
    turns++;
    ({ state, observation } = step);
    reward += step.reward;
    if (step.done) break;
  }
  const done = await finishTrajectory({ contextKey, sampleKey: `${input.runId}/samples/${input.uid}.json`, uid: input.uid, groupId: input.groupId, reward });
  return { uid: input.uid, reward, turns, ...done };
}
