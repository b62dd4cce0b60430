/** The python-engines servers a config asks rollflow to launch (engines.*.launch: true). */
import path from 'node:path';
import { warmupSteps, type RunConfig } from '../configs';
import { loraOf } from '../configs/model-args';
import { engineHealth, type EngineRole } from '../gpu-bridge';
import { logsDir, pidsDir, pythonBin, pythonEnginesEnv, stateDir } from '../paths';
import { ensureStarted, livePid, startDetached, stopProcess, waitUntil, type ManagedProcess } from './processes';

export interface LaunchedEngine {
  role: EngineRole;
  /** Where the engine is in the run config, e.g. engines.inference[0]. */
  configPath: string;
  url: string;
  backend: string;
  options: Record<string, unknown>;
  /** The run-config path each option comes from (actor_train.training_args.learning_rate, or <configPath>.options.<key>). */
  optionPaths: Record<string, string>;
  process: ManagedProcess;
}

type FromConfig = Record<string, { value: unknown; from: string }>;

/**
 * Settings a model-backed server takes from the run config (actor_infer /
 * actor_train, as ROLL names them), with the key each comes from; an
 * engine's own `options` override them. The sim backends load no model and take none.
 */
function optionsFromConfig(config: RunConfig, role: EngineRole, backend: string): FromConfig {
  if (backend === 'sim' || role === 'env') return {};
  const train = config.actor_train;
  const loading = backend === 'torch' ? modelLoading(config, role) : {};
  if (role === 'inference') {
    const { args, from } = roleModelArgs(config, role);
    return { model: { value: args.model_name_or_path, from: `${from}.model_args.model_name_or_path` }, ...loading };
  }
  const t = train.training_args;
  const arg = (key: keyof typeof t) => ({ value: t[key], from: `actor_train.training_args.${key}` });
  return {
    model: { value: train.model_args.model_name_or_path, from: 'actor_train.model_args.model_name_or_path' },
    ...loading,
    learning_rate: arg('learning_rate'),
    weight_decay: arg('weight_decay'),
    max_grad_norm: arg('max_grad_norm'),
    micro_batch_size: arg('per_device_train_batch_size'),
    ...(t.gradient_accumulation_steps === undefined ? {} : { gradient_accumulation_steps: arg('gradient_accumulation_steps') }),
    ...scheduleOptions(config),
  };
}

/** The learning-rate schedule, when it is not the constant default: linear and cosine decay over the run's max_steps. */
function scheduleOptions(config: RunConfig): FromConfig {
  const t = config.actor_train.training_args;
  if (t.lr_scheduler_type === 'constant') return {};
  const from = (key: string) => `actor_train.training_args.${key}`;
  return {
    lr_scheduler_type: { value: t.lr_scheduler_type, from: from('lr_scheduler_type') },
    warmup_steps: { value: warmupSteps(config), from: from(t.warmup_ratio !== undefined ? 'warmup_ratio' : 'warmup_steps') },
    ...(t.lr_scheduler_type === 'constant_with_warmup' ? {} : { lr_total_steps: { value: config.max_steps, from: 'max_steps' } }),
  };
}

/** The model_args a server of `role` loads its model by: actor_infer's for inference when given, else actor_train's. */
function roleModelArgs(config: RunConfig, role: EngineRole) {
  const infer = role === 'inference' ? config.actor_infer.model_args : undefined;
  return infer ? { args: infer, from: 'actor_infer' } : { args: config.actor_train.model_args, from: 'actor_train' };
}

/**
 * A torch server's dtype (its role's model_args) and LoRA settings (always actor_train's: the
 * inference servers apply the trainer's adapters); a LoRA key only when lora_rank > 0.
 */
function modelLoading(config: RunConfig, role: EngineRole): FromConfig {
  const { args, from } = roleModelArgs(config, role);
  const out: FromConfig = {};
  if (args.dtype !== undefined) out.dtype = { value: args.dtype, from: `${from}.model_args.dtype` };
  const lora = loraOf(config.actor_train.model_args);
  if (lora.rank.value > 0) {
    const at = (key: string) => `actor_train.model_args.${key}`;
    out.lora_rank = { value: lora.rank.value, from: at(lora.rank.key) };
    if (lora.alpha) out.lora_alpha = { value: lora.alpha.value, from: at(lora.alpha.key) };
    if (lora.target) out.lora_target = { value: lora.target.value, from: at(lora.target.key) };
  }
  return out;
}

/** The process of the engine serving `url` in `role`, with its pid and log files under the state dir `state`. */
export function engineProcess(role: EngineRole, url: string, state = stateDir()): ManagedProcess {
  const name = `engine-${role}-${new URL(url).port}`;
  return { name, pidFile: path.join(pidsDir(state), `${name}.pid`), logFile: path.join(logsDir(state), `${name}.log`), marker: 'rollflow_engines serve' };
}

export function launchedEngines(config: RunConfig): LaunchedEngine[] {
  const all = [
    ...config.engines.inference.map((e, i) => ({ role: 'inference' as const, configPath: `engines.inference[${i}]`, ...e })),
    { role: 'trainer' as const, configPath: 'engines.trainer', ...config.engines.trainer },
    { role: 'env' as const, configPath: 'engines.env', ...config.engines.env },
    // The llm_judge's server: an inference server with only its own options (not the policy's model).
    ...(config.engines.judge ? [{ role: 'inference' as const, configPath: 'engines.judge', ...config.engines.judge, ownOptionsOnly: true }] : []),
  ];
  return all
    .filter((e) => e.launch)
    .map((e) => {
      const fromConfig = 'ownOptionsOnly' in e ? {} : optionsFromConfig(config, e.role, e.backend);
      const own = Object.keys(e.options);
      return {
        role: e.role,
        configPath: e.configPath,
        url: e.url,
        backend: e.backend,
        options: { ...Object.fromEntries(Object.entries(fromConfig).map(([k, v]) => [k, v.value])), ...e.options },
        optionPaths: { ...Object.fromEntries(Object.entries(fromConfig).map(([k, v]) => [k, v.from])), ...Object.fromEntries(own.map((k) => [k, `${e.configPath}.options.${k}`])) },
        process: engineProcess(e.role, e.url),
      };
    });
}

export async function startEngine(e: LaunchedEngine): Promise<string> {
  const { hostname, port } = new URL(e.url);
  // A launched trainer exports weights under the state dir unless the config says otherwise.
  const options = e.role === 'trainer' ? { export_dir: path.join(stateDir(), 'weights', e.process.name), ...e.options } : e.options;
  const args = ['-m', 'rollflow_engines', 'serve', '--role', e.role, '--backend', e.backend, '--host', hostname.replace(/^\[|\]$/g, ''), '--port', port];
  for (const [k, v] of Object.entries(options)) args.push('--option', `${k}=${JSON.stringify(v)}`);
  const { pid, action } = await ensureStarted(e.process, JSON.stringify(args), () => startDetached(e.process, pythonBin(), args, pythonEnginesEnv(), JSON.stringify(args)));
  if (action === 'already running') return `${e.process.name}: already running (pid ${pid})`;
  // A model-backed server may first build its model (a tiny model's warm-start takes minutes on 2
  // loaded cores); it is watched all along, so a crash still fails fast with its log.
  const readyWithinMs = e.backend === 'sim' || e.role === 'env' ? 120_000 : 900_000;
  await waitUntil(e.process, () => engineHealth(e.url, { timeoutMs: 2_000 }), readyWithinMs);
  return `${e.process.name}: ${action === 'restarted' ? 'restarted with new settings' : 'started'} (pid ${pid}) at ${e.url}`;
}

export async function engineStatus(e: LaunchedEngine): Promise<{ ok: boolean; line: string }> {
  const pid = livePid(e.process);
  if (pid === undefined) return { ok: false, line: `${e.process.name}: stopped` };
  try {
    const h = await engineHealth(e.url, { timeoutMs: 2_000 });
    return { ok: true, line: `${e.process.name}: running pid=${pid} url=${e.url} backend=${h.backend}` };
  } catch (err) {
    return { ok: false, line: `${e.process.name}: unhealthy pid=${pid} (${(err as Error).message})` };
  }
}

export const stopEngine = (e: LaunchedEngine) => stopProcess(e.process);
