/**
 * Values computed from a validated config, in this one place. Nothing else in
 * rollflow recomputes them, so admission control, the CLI and the benchmarks
 * cannot disagree on, say, the batch size.
 */
import type { SampleStoreLocation } from '../core';
import type { RunConfig } from './schema';

export interface Derived {
  /** B: samples consumed by one training step. */
  samples_per_step: number;
  /** G: samples per group (GRPO group or env group). */
  group_size: number;
  /** Groups per step: B / G. */
  groups_per_step: number;
  /**
   * Groups started beyond what a step needs: redundant env groups
   * (num_env_groups − groups_per_step) plus max_additional_running_prompts.
   */
  spare_groups: number;
  /** The admission cap: floor((1 + α)·B) + spare_groups·G samples buffered, training or running (the rule: RunState.canDispatch). */
  max_samples_in_system: number;
  /** ⌈α⌉: the staleness a sample may have at consumption before stale_policy applies. */
  max_staleness: number;
  /** Model the inference servers load. */
  infer_model: string;
  /** Absolute run directory. */
  run_dir: string;
  /** The sample store: its absolute directory, or its bucket and key prefix ("" or ending in "/"). */
  sample_store: SampleStoreLocation;
  temporal: { host: string; port: number; ui_port: number; loopback: boolean };
}

export interface PathApi {
  resolve(...parts: string[]): string;
  join(...parts: string[]): string;
}

export function derive(c: RunConfig, cwd: string, path: PathApi): Derived {
  const env = c.train_env_manager;
  const group_size = env ? env.group_size : c.num_return_sequences_in_group;
  const groups_per_step = env ? Math.ceil((env.trajectories_per_step ?? env.num_env_groups * group_size) / group_size) : c.rollout_batch_size;
  const samples_per_step = group_size * groups_per_step;
  const spare_groups = (env ? env.num_env_groups - groups_per_step : 0) + c.max_additional_running_prompts;
  const run_dir = path.resolve(cwd, c.run_dir ?? path.join('runs', c.exp_name));
  const [host = '', port = ''] = c.temporal.address.split(':');
  const ui = new URL(c.temporal.ui_url);
  return {
    samples_per_step,
    group_size,
    groups_per_step,
    spare_groups,
    max_samples_in_system: Math.floor((1 + c.async_generation_ratio) * samples_per_step + 1e-9) + spare_groups * group_size,
    max_staleness: Math.max(0, Math.ceil(c.async_generation_ratio - 1e-9)),
    infer_model: c.actor_infer.model_args?.model_name_or_path ?? c.actor_train.model_args.model_name_or_path,
    run_dir,
    sample_store: c.sample_store.kind === 's3' ? { kind: 's3', bucket: c.sample_store.bucket!, prefix: c.sample_store.prefix ? `${c.sample_store.prefix.replace(/\/$/, '')}/` : '' } : { kind: 'dir', path: path.resolve(run_dir, c.sample_store.path ?? 'samples') },
    temporal: {
      host,
      port: Number(port),
      ui_port: Number(ui.port || (ui.protocol === 'https:' ? 443 : 80)),
      loopback: ['127.0.0.1', 'localhost', '::1'].includes(host),
    },
  };
}
