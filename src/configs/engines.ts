/**
 * The python-engines servers a config asks rollflow to launch (engines.*.launch: true), and the
 * options each is started with: the stack starts them, the pre-flight check has python-engines
 * check their options first. Derived from the config alone.
 */
import type { EngineRole } from '../core';
import { warmupSteps, type RunConfig } from './schema';
import { loraOf } from './model-args';

/** An engine server the config asks rollflow to launch, and the options it is started with. */
export interface EngineSpec {
  role: EngineRole;
  /** Where the engine is in the run config, e.g. engines.inference[0]. */
  configPath: string;
  url: string;
  /** Where the launched server listens: `listen`, else `url` (the worker always calls `url`). */
  listen: string;
  backend: string;
  options: Record<string, unknown>;
  /** The run-config path each option comes from (actor_train.training_args.learning_rate, or <configPath>.options.<key>). */
  optionPaths: Record<string, string>;
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

/** The engines with launch: true, each with its options: the run config's settings (actor_infer / actor_train) under its own `options`. */
export function engineSpecs(config: RunConfig): EngineSpec[] {
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
        listen: e.listen ?? e.url,
        backend: e.backend,
        options: { ...Object.fromEntries(Object.entries(fromConfig).map(([k, v]) => [k, v.value])), ...e.options },
        optionPaths: { ...Object.fromEntries(Object.entries(fromConfig).map(([k, v]) => [k, v.from])), ...Object.fromEntries(own.map((k) => [k, `${e.configPath}.options.${k}`])) },
      };
    });
}
