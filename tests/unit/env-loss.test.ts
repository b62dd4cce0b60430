// The envStep activity under each on_env_loss, over a python env whose server (an in-memory fake of the env role's
// session semantics: 404 for a session it does not hold; each step's index applied once, a repeat of the last
// answered from its record, any other index a 409) loses every session, as a restarted server does.
import { setTimeout as sleep } from 'node:timers/promises';
import { MockActivityEnvironment } from '../helpers/mock-activity';
import { describe, expect, it } from 'vitest';
import type { ActivityDeps } from '../../src/activities/deps';
import { enginesWaitedFor } from '../../src/activities/engine-wait';
import { rolloutActivities } from '../../src/activities/rollout';
import type { EnvLossPolicy } from '../../src/core';
import { EnvSessionLostError } from '../../src/envs/errors';
import { EngineRejectedError, EngineUnavailableError, STEP_TIMEOUT_MARGIN_MS, type EnvClient } from '../../src/gpu-bridge';

/** Sessions are counters of the actions applied; the observation names the seed and the actions so far. */
class FakeEnvServer {
  calls: string[] = [];
  down = false;
  /** Steps that save a snapshot (as swe_lite's bash and replace do): the actions so far, by id. */
  saveOn = new Set<string>();
  readonly snapshots = new Map<string, string[]>();
  /** The next step's answer is lost after the server applied it (a client timeout, a dead worker). */
  loseAnswer = false;
  /** The client timeout each step was sent with. */
  timeouts: (number | undefined)[] = [];
  private sessions = new Map<string, { seed: number; actions: string[]; last?: { index: number; action: string; answer: unknown } }>();
  private next = 0;

  lose(): void {
    this.sessions.clear();
  }

  client(): EnvClient {
    const up = () => {
      if (this.down) throw new EngineUnavailableError('http://127.0.0.1:1/step: ECONNREFUSED');
    };
    return {
      reset: async ({ seed, restore, index }: { seed: number; restore?: string; index?: number }) => {
        up();
        const saved = restore === undefined ? [] : this.snapshots.get(restore);
        if (!saved) throw new EngineRejectedError(`/reset: HTTP 404 restore: no snapshot ${restore}`, 404);
        if ((index ?? 0) !== saved.length) throw new EngineRejectedError(`/reset: HTTP 400 index: the snapshot holds ${saved.length} actions, not ${index}`, 400);
        const session = `s${this.next++}`;
        this.sessions.set(session, { seed, actions: [...saved] });
        this.calls.push(`reset ${seed}${restore ? ` from ${restore}` : ''}`);
        return { session, observation: `seed ${seed}:`, info: {}, on_env_loss: 'replay' as const, step_timeout_s: 160 };
      },
      step: async ({ session, index, action }: { session: string; index: number; action: string }, opts?: { timeoutMs?: number }) => {
        up();
        const s = this.sessions.get(session);
        if (!s) throw new EngineRejectedError(`/step: HTTP 404 unknown session ${session}`, 404);
        this.timeouts.push(opts?.timeoutMs);
        if (s.last?.index === index && s.last.action === action) {
          this.calls.push(`replayed ${session} #${index}`);
          return s.last.answer;
        }
        if (index !== s.actions.length) throw new EngineRejectedError(`/step: HTTP 409 index: the next step is index ${s.actions.length}`, 409);
        s.actions.push(action);
        this.calls.push(`step ${session} #${index} ${action}`);
        const snapshot = this.saveOn.has(action) ? `snap-${this.snapshots.size}` : undefined;
        if (snapshot) this.snapshots.set(snapshot, [...s.actions]);
        const answer = { observation: `seed ${s.seed}: ${s.actions.join(' ')}`, reward: 0, done: false, info: snapshot ? { snapshot } : {} };
        s.last = { index, action, answer };
        if (this.loseAnswer) {
          this.loseAnswer = false;
          throw new EngineUnavailableError(`http://127.0.0.1:1/step: no whole answer within ${opts?.timeoutMs} ms`, true);
        }
        return answer;
      },
      close: async () => ({ closed: true as const }),
      health: async () => (up(), { status: 'ok' }),
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
