/**
 * Checks a schema-valid config against everything that will run it, before
 * anything starts or stops: what `rollflow validate` passed used to fail a
 * run at once (a misspelt env_type, an env_config value out of range, engine
 * options a server refuses). `validate`, `run` and `dev up` all call it.
 *
 * Two stages, so the many configs the first stage rejects cost no process:
 * 1. in this process: with `run`, the run plan (the envs a run draws from,
 *    validation envs; a stack needs none); the env_config of TypeScript envs
 *    (their own parseConfig);
 * 2. offline in python-engines (`python -m rollflow_engines check`), with
 *    the pydantic models the servers use: the options of every engine this
 *    config launches, and the env_type, env_config and verifier of envs the
 *    env server serves, when rollflow launches that server (a remote one may
 *    register other envs).
 * Every problem names its run-config path.
 */
import { spawnSync } from 'node:child_process';
import { ConfigError, type ConfigProblem, type LoadedConfig } from '../configs';
import { engineSpecs } from '../configs/engines';
import { EnvConfigError, parseTsEnvConfig, TS_ENV_TYPES } from '../envs';
import { pythonBin, pythonEnginesEnv } from '../paths';
import { buildPlan } from './plan';
import { tlsRequestedBy } from './tls';

/** Throws ConfigError listing every problem; returns notes on what could not be checked here. `run`: check it can start a run, too. */
export function checkConfig(loaded: LoadedConfig, { run }: { run: boolean }): { notes: string[] } {
  const local = localProblems(loaded, run);
  if (local.length) throw new ConfigError(loaded.source, local);
  const { request, notes } = pythonRequest(loaded);
  const problems = request.engines.length || request.envs.length ? pythonProblems(request) : [];
  // Servers sharing a setting (two inference servers, one model) report it once.
  const named = new Map(problems.map((p) => ({ ...p, path: optionSource(p.path, loaded) })).map((p) => [JSON.stringify(p), p]));
  if (named.size) throw new ConfigError(loaded.source, [...named.values()]);
  return { notes };
}

function localProblems(loaded: LoadedConfig, run: boolean): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  try {
    if (run) buildPlan(loaded, 'preflight');
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    problems.push(...e.problems);
  }
  const embedded = loaded.config.temporal.embedded && loaded.derived.temporal.loopback;
  const tlsBy = tlsRequestedBy(loaded.config);
  if (embedded && tlsBy) {
    // The Temporal CLI's dev server serves no TLS: rollflow would start a plaintext server and then fail to reach it over TLS.
    problems.push({ path: 'temporal.embedded', given: true, expected: `false when ${tlsBy} asks for TLS: the embedded dev server at ${loaded.config.temporal.address} serves no TLS; run a TLS server there yourself (e.g. temporal/cluster.sh) or drop the TLS settings` });
  }
  for (const [tag, env] of Object.entries(loaded.config.custom_envs)) {
    try {
      parseTsEnvConfig(env.env_type, env.env_config);
    } catch (e) {
      if (!(e instanceof EnvConfigError)) throw e;
      problems.push(...e.problems.map((p) => ({ ...p, path: `custom_envs.${tag}.env_config${p.path ? `.${p.path}` : ''}` })));
    }
  }
  return problems;
}

interface CheckRequest {
  engines: { path: string; role: string; backend: string; options: Record<string, unknown> }[];
  envs: { path: string; env_type: string; env_config: Record<string, unknown> }[];
  verifiers: { path: string; name: string; config?: unknown; config_path?: string }[];
  other_env_types: string[];
}

function pythonRequest({ config }: LoadedConfig): { request: CheckRequest; notes: string[] } {
  const request: CheckRequest = {
    engines: engineSpecs(config).map((e) => ({ path: e.configPath, role: e.role, backend: e.backend, options: e.options })),
    envs: [],
    verifiers: [],
    other_env_types: TS_ENV_TYPES,
  };
  const notes: string[] = [];
  for (const [tag, env] of Object.entries(config.custom_envs)) {
    const path = `custom_envs.${tag}`;
    const verifier = env.env_config.verifier;
    if (!config.engines.env.launch) {
      if (!TS_ENV_TYPES.includes(env.env_type) || verifier !== undefined) notes.push(`${path}: not checked against the env server at ${config.engines.env.url} (engines.env.launch is false)`);
    } else if (!TS_ENV_TYPES.includes(env.env_type)) {
      request.envs.push({ path, env_type: env.env_type, env_config: env.env_config });
    } else if (typeof verifier === 'string') {
      // The dataset env scores through the env server's verifiers, with verifier_config as their settings.
      const settings = env.env_config.verifier_config;
      request.verifiers.push({ path: `${path}.env_config.verifier`, name: verifier, ...(settings !== undefined ? { config: settings, config_path: `${path}.env_config.verifier_config` } : {}) });
    }
  }
  return { request, notes };
}

function pythonProblems(request: CheckRequest): ConfigProblem[] {
  const args = ['-m', 'rollflow_engines', 'check'];
  const r = spawnSync(pythonBin(), args, { input: JSON.stringify(request), env: pythonEnginesEnv(), encoding: 'utf8', timeout: 120_000 });
  // Exit 0: valid, 1: problems found; anything else is the checker failing, not the config.
  if (r.status !== 0 && r.status !== 1) {
    const why = r.error?.message ?? (r.stderr.trim().split('\n').slice(-5).join('\n') || `exit ${r.status ?? r.signal}`);
    throw new Error(`could not check the config with python-engines (${pythonBin()} ${args.join(' ')}): ${why}`);
  }
  return (JSON.parse(r.stdout) as { problems: ConfigProblem[] }).problems;
}

/**
 * A launched engine's option can come from elsewhere in the run config (a
 * torch trainer's learning_rate from actor_train.training_args): name that key.
 */
function optionSource(problemPath: string, { config }: LoadedConfig): string {
  for (const e of engineSpecs(config)) {
    const prefix = `${e.configPath}.options.`;
    if (!problemPath.startsWith(prefix)) continue;
    const key = problemPath.slice(prefix.length).split(/[.[]/)[0]!;
    const source = e.optionPaths[key];
    return source ? source + problemPath.slice(prefix.length + key.length) : problemPath;
  }
  return problemPath;
}
