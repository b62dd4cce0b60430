/**
 * Envs served by python-engines' env role (frozen_lake, arithmetic, …). The
 * server holds the live env; the state kept here — session id, seed and the
 * actions taken — is enough to rebuild it. A server that no longer knows the
 * session (it restarted, or the session expired: a 404) makes `step` throw
 * EnvSessionLostError; under on_env_loss replay the activity then calls
 * `rebuild` (reset with the same seed, the recorded actions replayed) and
 * steps again. Each env declares its on_env_loss on the server (BaseEnv
 * on_env_loss), which reports it with every reset. An env that saves its
 * episode (swe_lite: its workspace, after each step that may change it)
 * names the snapshot in the step's info.snapshot; `rebuild` then resets with
 * `restore` and replays only the actions after it, so no command runs twice
 * (a snapshot that is gone, or refused as damaged: from the start instead).
 * Every step carries its index (the actions already applied: `actions.length`,
 * and in a rebuild each replayed action's own), so a retried step is answered
 * from the server's record instead of applied again; it waits the session's
 * step_timeout_s (the server's bound on one step) and a margin before a retry.
 * A server that cannot be reached at all is an EngineUnavailableError,
 * retried until it is back.
 */
import { EngineRejectedError, stepTimeoutMs, type EnvClient } from '../gpu-bridge';
import type { Env } from './env';
import { EnvSessionLostError } from './errors';

export interface PythonEnvState {
  session: string;
  seed: number;
  actions: string[];
  /** The server's bound on one step of this session (ResetResponse.step_timeout_s); absent in states from before it. */
  stepTimeoutS?: number;
  /** The latest snapshot the env saved, and how many of `actions` it holds. */
  snapshot?: { id: string; actions: number };
}

export interface PythonEnvConfig {
  /** The env name registered on the server. */
  env: string;
  config: Record<string, unknown>;
}

const isLostSession = (e: unknown) => e instanceof EngineRejectedError && e.status === 404;
/** A restore the server cannot do: the snapshot is gone (404) or its bytes are damaged (snapshots.py snapshot_corrupt). */
const isUnrestorable = (e: unknown) => isLostSession(e) || (e instanceof EngineRejectedError && e.code === 'snapshot_corrupt');
const snapshotOf = (info: Record<string, unknown>) => (typeof info.snapshot === 'string' ? info.snapshot : undefined);

export function pythonEnv(client: EnvClient, env: string): Env<PythonEnvState, PythonEnvConfig> {
  /** A session for the episode, from its start or (restore) from a snapshot holding its first `index` actions. */
  const open = async (config: PythonEnvConfig, seed: number, signal?: AbortSignal, restore?: { id: string; actions: number }) =>
    client.reset({ env: config.env, seed, config: config.config, ...(restore ? { restore: restore.id, index: restore.actions } : {}) }, { signal });

  return {
    name: env,
    // The server validates the env config (a bad key is a 400 naming config.<key>).
    parseConfig: (raw) => ({ env, config: (raw ?? {}) as Record<string, unknown> }),

    async reset(config, seed, signal) {
      const r = await open(config, seed, signal);
      // messages: e.g. swe_lite's tools for the chat template (a leading `tools` message), carried by EnvReset.messages to turn 0's request and, in the history, to every continuation.
      return {
        state: { session: r.session, seed, actions: [], stepTimeoutS: r.step_timeout_s },
        observation: r.observation,
        ...(r.messages ? { messages: r.messages } : {}),
        info: r.info,
        ...(r.on_env_loss ? { onLoss: r.on_env_loss } : {}),
      };
    },

    async step(config, state, action, signal) {
      const { session } = state;
      let r;
      try {
        r = await client.step({ session, index: state.actions.length, action }, { signal, timeoutMs: stepTimeoutMs(state.stepTimeoutS) });
      } catch (e) {
        if (isLostSession(e)) throw new EnvSessionLostError(`${env}: the env server no longer has session ${session} (it restarted, or the session expired): ${(e as Error).message}`);
        throw e;
      }
      if (r.done) await client.close({ session }, { signal }).catch(() => undefined); // best effort: sessions also expire
      const actions = [...state.actions, action];
      const snapshot = snapshotOf(r.info);
      return { state: { ...state, actions, ...(snapshot ? { snapshot: { id: snapshot, actions: actions.length } } : {}) }, observation: r.observation, reward: r.reward, done: r.done, info: r.info };
    },

    async rebuild(config, state, signal) {
      const { snapshot } = state;
      // From the latest snapshot when there is one (one that is gone or damaged: from the start).
      const restored = snapshot ? await open(config, state.seed, signal, snapshot).catch((e: unknown) => (isUnrestorable(e) ? undefined : Promise.reject(e))) : undefined;
      const { session, step_timeout_s: stepTimeoutS } = restored ?? (await open(config, state.seed, signal));
      const first = restored ? snapshot!.actions : 0;
      const timeoutMs = stepTimeoutMs(stepTimeoutS);
      for (const [i, past] of state.actions.slice(first).entries()) await client.step({ session, index: first + i, action: past }, { signal, timeoutMs });
      return { ...state, session, stepTimeoutS };
    },
  };
}
