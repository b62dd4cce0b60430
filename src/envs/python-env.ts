/**
 * Envs served by python-engines' env role (frozen_lake, arithmetic, …). The
 * server holds the live env; the state kept here — session id, seed and the
 * actions taken — is enough to rebuild it: if the server lost the session
 * (restart, expiry), the env is reset with the same seed and the recorded
 * actions are replayed (deterministic envs), then the new action is applied.
 */
import { EngineRejectedError, type EnvClient } from '../gpu-bridge';
import type { Env } from './env';

export interface PythonEnvState {
  session: string;
  seed: number;
  actions: string[];
}

export interface PythonEnvConfig {
  /** The env name registered on the server. */
  env: string;
  config: Record<string, unknown>;
}

const isLostSession = (e: unknown) => e instanceof EngineRejectedError && e.status === 404;

export function pythonEnv(client: EnvClient, env: string): Env<PythonEnvState, PythonEnvConfig> {
  const open = async (config: PythonEnvConfig, seed: number, signal?: AbortSignal) =>
    client.reset({ env: config.env, seed, config: config.config }, { signal });

  return {
    name: env,
    // The server validates the env config (a bad key is a 400 naming config.<key>).
    parseConfig: (raw) => ({ env, config: (raw ?? {}) as Record<string, unknown> }),

    async reset(config, seed, signal) {
      const r = await open(config, seed, signal);
      return { state: { session: r.session, seed, actions: [] }, observation: r.observation, info: r.info };
    },

    async step(config, state, action, signal) {
      let session = state.session;
      let r;
      try {
        r = await client.step({ session, action }, { signal });
      } catch (e) {
        if (!isLostSession(e)) throw e;
        session = (await open(config, state.seed, signal)).session;
        for (const past of state.actions) await client.step({ session, action: past }, { signal });
        r = await client.step({ session, action }, { signal });
      }
      if (r.done) await client.close({ session }, { signal }).catch(() => undefined); // best effort: sessions also expire
      return { state: { session, seed: state.seed, actions: [...state.actions, action] }, observation: r.observation, reward: r.reward, done: r.done, info: r.info };
    },
  };
}
