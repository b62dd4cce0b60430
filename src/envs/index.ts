/**
 * Which implementation serves an env_type: TypeScript envs run in the worker
 * process; every other name is served by the python-engines env role.
 */
import type { EnvClient } from '../gpu-bridge';
import { dataset } from './dataset';
import type { Env } from './env';
import { latencySim } from './latency-sim';
import { pythonEnv } from './python-env';

/** TypeScript envs by env_type; dataset scores replies through the env server's verifiers. */
const TS_ENVS: Record<string, (client: EnvClient) => Env<never, never>> = {
  latency_sim: () => latencySim as unknown as Env<never, never>,
  dataset: (client) => dataset(client) as unknown as Env<never, never>,
};

/** The env types served in the worker process rather than by the env server. */
export const TS_ENV_TYPES = Object.keys(TS_ENVS);

/** Checks a TypeScript env's env_config (throws EnvConfigError); parseConfig reads no server, so no client is given. */
export function parseTsEnvConfig(envType: string, raw: unknown): void {
  TS_ENVS[envType]?.(undefined as never).parseConfig(raw);
}

export function resolveEnv(envType: string, client: EnvClient): Env<unknown, unknown> {
  return (TS_ENVS[envType]?.(client) as Env<unknown, unknown> | undefined) ?? (pythonEnv(client, envType) as Env<unknown, unknown>);
}

export type { Env, EnvReset, EnvStep } from './env';
export { EnvConfigError } from './errors';
export { latencySim } from './latency-sim';
export { dataset } from './dataset';
export { pythonEnv, type PythonEnvState } from './python-env';
