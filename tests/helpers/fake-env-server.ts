// An in-memory fake of the env role's session semantics, for activity tests over a python env (frozen_lake): 404
// for a session it does not hold; each step's index applied once, a repeat of the last answered from its record,
// any other index a 409; it can lose every session (a restarted server), be down, or lose one answer.
import { EngineRejectedError, EngineUnavailableError, type EnvClient } from '../../src/gpu-bridge';

/** Sessions are counters of the actions applied; the observation names the seed and the actions so far. */
export class FakeEnvServer {
  calls: string[] = [];
  down = false;
  /** Steps that save a snapshot (as swe_lite's commands do): the actions so far, by id. */
  saveOn = new Set<string>();
  readonly snapshots = new Map<string, string[]>();
  /** The next step's answer is lost after the server applied it (a client timeout, a dead worker). */
  loseAnswer = false;
  /** Steps from now on fail on their own (the server answers its health check): a broken env, not an outage. */
  broken = false;
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
        if (this.broken) throw new Error('/step: the env failed on its own');
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
