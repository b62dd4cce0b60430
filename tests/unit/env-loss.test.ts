// The envStep activity under each on_env_loss, over a python env whose server (an in-memory fake of the env role's
// session semantics: 404 for a session it does not hold) loses every session, as a restarted server does.
import { MockActivityEnvironment } from '../helpers/mock-activity';
import { describe, expect, it } from 'vitest';
import type { ActivityDeps } from '../../src/activities/deps';
import { rolloutActivities } from '../../src/activities/rollout';
import type { EnvLossPolicy } from '../../src/core';
import { EnvSessionLostError } from '../../src/envs/errors';
import { EngineRejectedError, EngineUnavailableError, type EnvClient } from '../../src/gpu-bridge';

/** Sessions are counters of the actions applied; the observation names the seed and the actions so far. */
class FakeEnvServer {
  calls: string[] = [];
  down = false;
  /** Steps that save a snapshot (as swe_lite's bash and replace do): the actions so far, by id. */
  saveOn = new Set<string>();
  readonly snapshots = new Map<string, string[]>();
  private sessions = new Map<string, { seed: number; actions: string[] }>();
  private next = 0;

  lose(): void {
    this.sessions.clear();
  }

  client(): EnvClient {
    const up = () => {
      if (this.down) throw new EngineUnavailableError('http://127.0.0.1:1/step: ECONNREFUSED');
    };
    return {
      reset: async ({ seed, restore }: { seed: number; restore?: string }) => {
        up();
        const saved = restore === undefined ? [] : this.snapshots.get(restore);
        if (!saved) throw new EngineRejectedError(`/reset: HTTP 404 restore: no snapshot ${restore}`, 404);
        const session = `s${this.next++}`;
        this.sessions.set(session, { seed, actions: [...saved] });
        this.calls.push(`reset ${seed}${restore ? ` from ${restore}` : ''}`);
        return { session, observation: `seed ${seed}:`, info: {}, on_env_loss: 'replay' as const };
      },
      step: async ({ session, action }: { session: string; action: string }) => {
        up();
        const s = this.sessions.get(session);
        if (!s) throw new EngineRejectedError(`/step: HTTP 404 unknown session ${session}`, 404);
        s.actions.push(action);
        this.calls.push(`step ${session} ${action}`);
        const snapshot = this.saveOn.has(action) ? `snap-${this.snapshots.size}` : undefined;
        if (snapshot) this.snapshots.set(snapshot, [...s.actions]);
        return { observation: `seed ${s.seed}: ${s.actions.join(' ')}`, reward: 0, done: false, info: snapshot ? { snapshot } : {} };
      },
      close: async () => ({ closed: true as const }),
    } as unknown as EnvClient;
  }
}

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
    expect(server.calls).toEqual(['reset 5', 'step s1 Left', 'step s1 Down', 'step s1 Right']);
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
    expect(server.calls).toEqual(['reset 5 from snap-0', 'step s1 Down', 'step s1 Right']); // Left never runs again
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
    expect(server.calls).toEqual(['reset 5', 'step s1 Left', 'step s1 Down', 'step s1 Right']);
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

  it('a server that cannot be reached is not a lost session: the call fails retryably (Temporal retries it) and no policy applies', async () => {
    const { server, start, step } = setup();
    const state = await start();
    server.down = true;
    await expect(step(state, 'drop')).rejects.toBeInstanceOf(EngineUnavailableError);
    server.down = false;
    expect(await step(state, 'drop')).toMatchObject({ observation: 'seed 5: Left Down Right' }); // back with its sessions: no loss
  });

  it('the env\'s declaration reaches the episode with its reset', async () => {
    const { envReset } = rolloutActivities({ env: new FakeEnvServer().client(), maxResultBytes: 1 << 20 } as ActivityDeps);
    expect(await new MockActivityEnvironment().run(envReset, { envType: 'frozen_lake', envConfig: {}, seed: 1 })).toMatchObject({ onLoss: 'replay' });
  });
});
