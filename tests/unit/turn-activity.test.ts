// The turn activity (env_calls turn, and auto in trajectory workflows): a generation and its env step in one call.
// What a retry of it must do, over a python env (helpers/fake-env-server.ts) and an in-memory context store:
// a turn already stored is never generated again, a step already applied is answered from the server's record,
// and the step keeps the budget of attempts an envStep activity has, counted from the attempt that stored the turn.
import { describe, expect, it } from 'vitest';
import type { ActivityDeps } from '../../src/activities/deps';
import { rolloutActivities, type TrajectoryContext, type TurnSummary } from '../../src/activities/rollout';
import { ENV_STEP_ATTEMPTS, EnvStepAttemptsExhaustedError } from '../../src/core';
import { EnvSessionLostError } from '../../src/envs/errors';
import { EngineUnavailableError } from '../../src/gpu-bridge';
import { FakeEnvServer } from '../helpers/fake-env-server';
import { MockActivityEnvironment } from '../helpers/mock-activity';

const KEY = 'ctx/run/e0-p0-s0';
const env = { envType: 'frozen_lake', envConfig: {} };
const sampling = { max_tokens: 8, temperature: 1, top_p: 1, top_k: -1, seed: 1 };
const stored: TurnSummary = { action: 'Right', tokens: 1, finish_reason: 'stop', aborts: 0, failovers: 0, versions: [0] };

/** An episode two steps in (Left, Down), whose turn 2 ('Right') was generated and stored in attempt `storedAt`. */
async function setup(storedAt: number, turnNo = 2, call?: string) {
  const server = new FakeEnvServer();
  const contexts = new Map<string, TrajectoryContext>();
  contexts.set(KEY, { messages: [], prompt_ids: [], response_ids: [], old_logprobs: [], loss_mask: [], version_spans: [], aborts: 0, last_turn: { turn: turnNo, summary: stored, attempt: storedAt, ...(call ? { call } : {}) } });
  let generations = 0;
  const deps = {
    env: server.client(),
    store: { get: async (k: string) => structuredClone(contexts.get(k)), put: async (k: string, v: TrajectoryContext) => void contexts.set(k, structuredClone(v)) },
    router: { run: async () => (generations++, Promise.reject(new Error('the turn was stored: nothing may generate it again'))) },
    weights: { read: async () => undefined },
    maxResultBytes: 1 << 20,
    heartbeatPartialTokens: true,
  } as unknown as ActivityDeps;
  const { envReset, envStep, playTurn } = rolloutActivities(deps);
  // (run's type cannot infer an activity's result from its function: said here once.)
  const run = <P extends unknown[], R>(mock: MockActivityEnvironment, fn: (...args: P) => Promise<R>, ...args: P) => mock.run(fn, ...args) as Promise<R>;
  const first = new MockActivityEnvironment();
  let { state } = await run(first, envReset, { ...env, seed: 5 });
  for (const action of ['Left', 'Down']) state = (await run(first, envStep, { ...env, state, action })).state;
  server.calls = [];
  const turn = (attempt: number, onLoss?: 'drop', activityId = 'a1') =>
    run(new MockActivityEnvironment({ attempt, activityId, workflowExecution: { workflowId: 'run/e0-p0/s0', runId: 'r1' } }), playTurn, { generate: { contextKey: KEY, observation: 'o', turn: turnNo, sampling, affinity: 'e0-p0-s0', runId: 'run' }, step: { ...env, state, ...(onLoss ? { onLoss } : {}) } });
  return { server, turn, generations: () => generations };
}

describe('a retried turn activity', () => {
  it('redoes nothing: the stored turn is returned from the context, and its step, applied before the answer was lost, from the server\'s record', async () => {
    const { server, turn, generations } = await setup(1);
    server.loseAnswer = true;
    await expect(turn(1)).rejects.toBeInstanceOf(EngineUnavailableError); // applied, answer lost (a dead worker, a timeout)
    const r = await turn(2);
    expect(server.calls).toEqual(['step s0 #2 Right', 'replayed s0 #2']);
    expect(r.turn).toEqual(stored);
    expect(r.step).toMatchObject({ observation: 'seed 5: Left Down Right', state: { actions: ['Left', 'Down', 'Right'] } });
    expect(generations()).toBe(0);
  });

  it('at turn 0 too, within the same call; a turn 0 stored by another call (an episode started over) is generated afresh', async () => {
    const same = await setup(1, 0, 'r1/a1');
    expect((await same.turn(2)).turn).toEqual(stored);
    expect(same.generations()).toBe(0);
    const other = await setup(1, 0, 'r1/a0');
    await expect(other.turn(2)).rejects.toThrow(/nothing may generate it again/);
    expect(other.generations()).toBe(1);
  });

  it(`gives its env step ${ENV_STEP_ATTEMPTS} attempts counted from the attempt that stored the turn, then fails for good; a final failure keeps its own type`, async () => {
    const { server, turn } = await setup(3);
    server.broken = true;
    // Attempts 3 … 26 are the step's 1st … 24th: each failure is thrown as it is, for the retry policy to retry.
    await expect(turn(3 + ENV_STEP_ATTEMPTS - 2)).rejects.toThrow(/^\/step: the env failed on its own$/);
    const err = await turn(3 + ENV_STEP_ATTEMPTS - 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvStepAttemptsExhaustedError);
    expect((err as Error).message).toBe(`the env step of turn 2 failed ${ENV_STEP_ATTEMPTS} times: /step: the env failed on its own`);
    server.broken = false;
    server.lose(); // under drop, a lost session is the workflow's to decide, whatever the attempt
    await expect(turn(3 + ENV_STEP_ATTEMPTS - 1, 'drop')).rejects.toBeInstanceOf(EnvSessionLostError);
  });
});
