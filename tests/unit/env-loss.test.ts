// The envStep activity under each on_env_loss, over a python env whose server (helpers/fake-env-server.ts) loses
// every session, as a restarted server does.
import { setTimeout as sleep } from 'node:timers/promises';
import { MockActivityEnvironment } from '../helpers/mock-activity';
import { describe, expect, it } from 'vitest';
import type { ActivityDeps } from '../../src/activities/deps';
import { enginesWaitedFor } from '../../src/activities/engine-wait';
import { rolloutActivities } from '../../src/activities/rollout';
import type { EnvLossPolicy } from '../../src/core';
import { EnvSessionLostError } from '../../src/envs/errors';
import { EngineUnavailableError, STEP_TIMEOUT_MARGIN_MS } from '../../src/gpu-bridge';
import { FakeEnvServer } from '../helpers/fake-env-server';

function setup() {
  const server = new FakeEnvServer();
  const { envReset, envStep } = rolloutActivities({ env: server.client(), maxResultBytes: 1 << 20 } as ActivityDeps);
  const mock = new MockActivityEnvironment();
  // (run's type cannot infer an activity's result from its function: said here once.)
  const activity = { run: <P extends unknown[], R>(fn: (...args: P) => Promise<R>, ...args: P) => mock.run(fn, ...args) as Promise<R> };
  const input = { envType: 'frozen_lake', envConfig: {} };
  const start = async () => {
    let { state } = await activity.run(envReset, { ...input, seed: 5 });
    for (const action of ['Left', 'Down']) state = (await activity.run(envStep, { ...input, state, action })).state;
    return state;
  };
  const step = (state: unknown, onLoss?: EnvLossPolicy) => activity.run(envStep, { ...input, state, action: 'Right', ...(onLoss ? { onLoss } : {}) });
  return { server, start, step };
}

describe('envStep on a lost env session', () => {
  it.each([['replay' as const], [undefined]])('on_env_loss %s (replay is also the default): rebuilds the session at the same seed, replays the recorded actions, then steps', async (onLoss) => {
    const { server, start, step } = setup();
    const state = await start();
    server.lose();
    server.calls = [];
    const r = await step(state, onLoss);
    expect(r).toMatchObject({ replayed: true, observation: 'seed 5: Left Down Right' });
    expect(server.calls).toEqual(['reset 5', 'step s1 #0 Left', 'step s1 #1 Down', 'step s1 #2 Right']);
    expect(r.state).toMatchObject({ session: 's1', actions: ['Left', 'Down', 'Right'] });
  });

  it('an env that saved a snapshot resumes from it: only the actions after it are applied again', async () => {
    const { server, start, step } = setup();
    server.saveOn.add('Left'); // Left changed the env's state (a command); Down did not (a view)
    const state = await start();
    expect(state).toMatchObject({ snapshot: { id: 'snap-0', actions: 1 } });
    server.lose();
    server.calls = [];
    const r = await step(state);
    expect(server.calls).toEqual(['reset 5 from snap-0', 'step s1 #1 Down', 'step s1 #2 Right']); // Left never runs again
    expect(r).toMatchObject({ replayed: true, observation: 'seed 5: Left Down Right' });
  });

  it('a snapshot the servers no longer have (404) falls back to replaying every action', async () => {
    const { server, start, step } = setup();
    server.saveOn.add('Left');
    const state = await start();
    server.lose();
    server.snapshots.clear();
    server.calls = [];
    expect(await step(state)).toMatchObject({ observation: 'seed 5: Left Down Right' });
    expect(server.calls).toEqual(['reset 5', 'step s1 #0 Left', 'step s1 #1 Down', 'step s1 #2 Right']);
  });

  it.each([['restart' as const], ['drop' as const]])('on_env_loss %s: the lost session goes to the workflow as EnvSessionLostError, untouched', async (onLoss) => {
    const { server, start, step } = setup();
    const state = await start();
    server.lose();
    server.calls = [];
    const err = await step(state, onLoss).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvSessionLostError);
    expect((err as Error).message).toMatch(/frozen_lake: the env server no longer has session s0/);
    expect(server.calls).toEqual([]);
  });

  it('a server that cannot be reached is not a lost session: the call waits for it (no attempt used up) and no policy applies', async () => {
    const { server, start, step } = setup();
    const state = await start();
    server.down = true;
    const waiting = step(state, 'drop');
    for (let i = 0; enginesWaitedFor().length === 0; i++) {
      expect(i, 'the step never started waiting for the server').toBeLessThan(3000);
      await sleep(10);
    }
    server.down = false;
    expect(await waiting).toMatchObject({ observation: 'seed 5: Left Down Right' }); // back with its sessions: no loss
    expect(enginesWaitedFor()).toEqual([]);
  });

  it('a step retried after its answer was lost carries the same index and is answered from the record, not applied again', async () => {
    const { server, start, step } = setup();
    const state = await start();
    server.calls = [];
    server.loseAnswer = true;
    await expect(step(state)).rejects.toBeInstanceOf(EngineUnavailableError); // the first attempt: applied, answer lost
    const r = await step(state); // Temporal's retry: the same activity input, so the same state and index
    expect(server.calls).toEqual(['step s0 #2 Right', 'replayed s0 #2']);
    expect(r).toMatchObject({ observation: 'seed 5: Left Down Right', state: { actions: ['Left', 'Down', 'Right'] } });
    expect(r).not.toHaveProperty('replayed'); // not a lost session: nothing was rebuilt
  });

  it('each step waits the server\'s bound on it (step_timeout_s) and a margin; a state from before the bound, the margin alone', async () => {
    const { server, start, step } = setup();
    const state = await start();
    await step(state);
    await step({ ...(state as object), stepTimeoutS: undefined });
    expect(server.timeouts).toEqual([160_000 + STEP_TIMEOUT_MARGIN_MS, 160_000 + STEP_TIMEOUT_MARGIN_MS, 160_000 + STEP_TIMEOUT_MARGIN_MS, STEP_TIMEOUT_MARGIN_MS]);
  });

  it('the env\'s declaration reaches the episode with its reset', async () => {
    const { envReset } = rolloutActivities({ env: new FakeEnvServer().client(), maxResultBytes: 1 << 20 } as ActivityDeps);
    expect(await new MockActivityEnvironment().run(envReset, { envType: 'frozen_lake', envConfig: {}, seed: 1 })).toMatchObject({ onLoss: 'replay' });
  });
});
