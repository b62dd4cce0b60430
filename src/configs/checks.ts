/**
 * The run config's checks between fields (one zod refinement of the whole
 * config): env tags exist, partitions add up, a warmup the schedule would
 * use, domain shares, model args the engines act on, reward routing.
 */
import type { z } from 'zod';
import { loraOf, sameLora, setsLora } from './model-args';
import type { ActorInferSchema, ActorTrainSchema } from './sections/actors';
import type { EnginesSchema } from './sections/engines';
import type { TemporalSchema } from './sections/temporal';
import type { CustomEnvSchema, EnvManagerSchema, RewardSchema } from './sections/envs';

/** What the checks read of a parsed run config: its sections (schema.ts's RunConfig has them all). */
interface RawRunConfig {
  actor_train: z.output<typeof ActorTrainSchema>;
  actor_infer: z.output<typeof ActorInferSchema>;
  train_env_manager?: z.output<typeof EnvManagerSchema>;
  val_env_manager?: z.output<typeof EnvManagerSchema>;
  custom_envs: Record<string, z.output<typeof CustomEnvSchema>>;
  trajectory_workflows: boolean;
  num_return_sequences_in_group: number;
  rewards: Record<string, z.output<typeof RewardSchema>>;
  domain_interleave_probs?: Record<string, number>;
  engines: z.output<typeof EnginesSchema>;
  temporal: z.output<typeof TemporalSchema>;
}

/** Checks between fields: env tags exist, partitions add up, domain shares sum to 1. */
export function checkCrossReferences(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  for (const key of ['train_env_manager', 'val_env_manager'] as const) {
    const m = c[key];
    if (!m) continue;
    m.tags.forEach((tag, i) => {
      if (!(tag in c.custom_envs)) {
        const known = Object.keys(c.custom_envs);
        ctx.addIssue({ code: 'custom', path: [key, 'tags', i], message: `no custom_envs entry named "${tag}"; defined: ${known.length ? known.join(', ') : '(none)'}` });
      }
    });
    if (m.trajectories_per_step !== undefined && m.trajectories_per_step > m.num_env_groups * m.group_size) {
      ctx.addIssue({ code: 'custom', path: [key, 'trajectories_per_step'], message: `expected at most num_env_groups × group_size = ${m.num_env_groups * m.group_size} (the env groups cannot hold more)` });
    }
    if (m.num_groups_partition) {
      const sum = m.num_groups_partition.reduce((a, b) => a + b, 0);
      if (m.num_groups_partition.length !== m.tags.length || sum !== m.num_env_groups) {
        ctx.addIssue({ code: 'custom', path: [key, 'num_groups_partition'], message: `expected ${m.tags.length} entries (one per tag) summing to num_env_groups = ${m.num_env_groups}` });
      }
    }
  }
  checkRewards(c, ctx);
  checkRouting(c, ctx);
  checkGroupHistory(c, ctx);
  checkSchedule(c, ctx);
  checkInterleave(c, ctx);
  checkModelArgs(c, ctx);
  // ROLL keys rollflow does not act on: refused, never accepted and ignored.
  for (const key of ['train_env_manager', 'val_env_manager'] as const) {
    if (c[key]?.max_traj_per_env !== undefined) {
      ctx.addIssue({ code: 'custom', path: [key, 'max_traj_per_env'], message: 'not a rollflow setting: every trajectory gets an env session of its own (so a lost episode can be replayed) and no instance is reused; remove the key' });
    }
  }
  if (c.val_env_manager?.trajectories_per_step !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['val_env_manager', 'trajectories_per_step'], message: 'validation scores every trajectory of its env groups; trajectories_per_step applies to train_env_manager only' });
  }
}

/** A warmup the schedule would not use is refused, never ignored. */
function checkSchedule(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  const t = c.actor_train.training_args;
  const path = ['actor_train', 'training_args'];
  if (t.warmup_steps !== undefined && t.warmup_ratio !== undefined) {
    ctx.addIssue({ code: 'custom', path: [...path, 'warmup_ratio'], message: `warmup_steps (${t.warmup_steps}) is set too; give one of the two` });
  }
  const warmup = t.warmup_steps ?? t.warmup_ratio ?? 0;
  if (t.lr_scheduler_type === 'constant' && warmup > 0) {
    const key = t.warmup_steps !== undefined ? 'warmup_steps' : 'warmup_ratio';
    ctx.addIssue({ code: 'custom', path: [...path, key], message: 'lr_scheduler_type constant has no warmup; use constant_with_warmup, linear or cosine' });
  }
}

/** The tolerance on domain_interleave_probs' sum. */
const SHARE_SUM_TOLERANCE = 1e-6;

/** domain_interleave_probs: shares summing to 1, of the rows of the one dataset env training draws from. */
function checkInterleave(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  for (const [tag, env] of Object.entries(c.custom_envs)) {
    if (env.env_config.domain_interleave_probs !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['custom_envs', tag, 'env_config', 'domain_interleave_probs'], message: 'set by the run config\'s top-level domain_interleave_probs; give the shares there' });
    }
  }
  const shares = c.domain_interleave_probs;
  if (!shares) return;
  const sum = Object.values(shares).reduce((a, b) => a + b, 0);
  if (Math.abs(sum - 1) > SHARE_SUM_TOLERANCE) {
    ctx.addIssue({ code: 'custom', path: ['domain_interleave_probs'], message: `expected each domain's share of a batch, summing to 1 (± ${SHARE_SUM_TOLERANCE}); these sum to ${sum}` });
  }
  const training = c.train_env_manager?.tags ?? Object.keys(c.custom_envs);
  const types = training.map((tag) => `${tag} (${c.custom_envs[tag]?.env_type ?? 'undefined'})`);
  if (training.length !== 1 || c.custom_envs[training[0]!]?.env_type !== 'dataset') {
    ctx.addIssue({ code: 'custom', path: ['domain_interleave_probs'], message: `needs exactly one training env, of env_type dataset (the shares are of its rows' domains); training draws from ${types.join(', ') || 'no env'}` });
  }
}

/** LoRA and dtype reach engines that act on them (model-args.ts); the inference servers' LoRA is the trainer's. */
function checkModelArgs(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  const train = c.actor_train.model_args;
  const infer = c.actor_infer.model_args;
  const lora = loraOf(train);
  const torchInference = c.engines.inference.some((e) => e.backend === 'torch');
  if (lora.rank.value > 0) {
    const at = ['actor_train', 'model_args', lora.rank.key];
    if (c.engines.trainer.backend !== 'torch') {
      ctx.addIssue({ code: 'custom', path: at, message: `LoRA is trained by the torch trainer only; engines.trainer.backend is "${c.engines.trainer.backend}"` });
    }
    c.engines.inference.forEach((e, i) => {
      if (e.backend !== 'torch') ctx.addIssue({ code: 'custom', path: at, message: `the inference servers apply the trainer's LoRA adapters, which only the torch backend does; engines.inference[${i}].backend is "${e.backend}"` });
    });
    if (infer && infer.model_name_or_path !== train.model_name_or_path) {
      ctx.addIssue({ code: 'custom', path: ['actor_infer', 'model_args', 'model_name_or_path'], message: `with LoRA the inference servers apply the trainer's adapter to the trainer's base model, actor_train.model_args.model_name_or_path "${train.model_name_or_path}"` });
    }
  }
  if (infer && setsLora(infer) && !sameLora(loraOf(infer), lora)) {
    const key = loraOf(infer).rank.key;
    ctx.addIssue({ code: 'custom', path: ['actor_infer', 'model_args', key], message: `the inference servers take their LoRA settings from actor_train.model_args (${lora.rank.key} ${lora.rank.value}) to apply the trainer's adapters; remove the LoRA keys here or give the same values` });
  }
  // dtype acts on torch engines only: the trainer, and the inference servers when actor_infer.model_args does not replace it.
  if (train.dtype !== undefined && c.engines.trainer.backend !== 'torch' && (infer !== undefined || !torchInference)) {
    ctx.addIssue({ code: 'custom', path: ['actor_train', 'model_args', 'dtype'], message: `only torch engines load a model in a dtype; no torch engine takes it here (megatron: engines.trainer.options.megatron.bf16; vllm: options.vllm.dtype)` });
  }
  if (infer?.dtype !== undefined && !torchInference) {
    ctx.addIssue({ code: 'custom', path: ['actor_infer', 'model_args', 'dtype'], message: 'only torch inference servers load a model in a dtype; none is configured (vllm: options.vllm.dtype)' });
  }
}

/** `rewards` routes dataset rows by domain: each domain to one reward, and only where a dataset env can use it. */
function checkRewards(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  const owner = new Map<string, string>();
  for (const [name, reward] of Object.entries(c.rewards)) {
    reward.tag_included.forEach((tag, i) => {
      const first = owner.get(tag);
      if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['rewards', name, 'tag_included', i], message: `domain "${tag}" is already scored by rewards.${first}; a domain goes to one reward` });
      else owner.set(tag, name);
    });
  }
  if (owner.size === 0) return;
  const routed = Object.entries(c.custom_envs).filter(([, e]) => e.env_type === 'dataset' && e.env_config.verifier === undefined);
  if (routed.length === 0) {
    ctx.addIssue({ code: 'custom', path: ['rewards'], message: 'rewards route dataset rows by domain, but no custom_envs entry is an env_type dataset without its own env_config.verifier' });
  }
}

/**
 * A run that routes by role calls each env server from a worker beside it: a local activity would run on whichever
 * worker runs the workflow, and a turn activity beside the inference server, not the env server.
 */
function checkRouting(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  if (!c.temporal.route_by_role) return;
  const where = { local: 'local env calls run on the worker of the workflow', turn: 'a turn activity runs its env step beside the inference server' } as const;
  for (const [tag, env] of Object.entries(c.custom_envs)) {
    if (env.env_calls === 'local' || env.env_calls === 'turn') ctx.addIssue({ code: 'custom', path: ['custom_envs', tag, 'env_calls'], message: `env_calls ${env.env_calls}: ${where[env.env_calls]}, not beside an env server; temporal.route_by_role is true, so use activity or auto` });
  }
}

/**
 * History events a turn adds to the workflow that runs it, with room to spare: 6 measured (a turn activity's
 * scheduled, started and completed, a workflow task's three), a restart or a retry's failure adds more.
 */
const EVENTS_PER_TURN = 8;
/** Events a group's history may plan for: Temporal fails a workflow at 51,200 and warns from 10,240 (its defaults). */
const GROUP_HISTORY_EVENTS = 40_000;

/**
 * trajectory_workflows false puts all of a group's turns in the group's history: G × max_steps turns must fit well
 * under Temporal's event limit, or the group would fail partway through its episodes.
 */
function checkGroupHistory(c: Omit<RawRunConfig, never>, ctx: z.RefinementCtx): void {
  if (c.trajectory_workflows) return;
  // Without a train_env_manager a run's groups are num_return_sequences_in_group of its envs (derive.ts).
  const managers = [c.train_env_manager ?? { group_size: c.num_return_sequences_in_group, tags: Object.keys(c.custom_envs) }, ...(c.val_env_manager ? [c.val_env_manager] : [])];
  for (const { group_size: groupSize, tags } of managers) {
    for (const tag of tags) {
      const turns = c.custom_envs[tag]?.max_steps;
      if (turns === undefined || groupSize * turns * EVENTS_PER_TURN <= GROUP_HISTORY_EVENTS) continue;
      ctx.addIssue({ code: 'custom', path: ['trajectory_workflows'], message: `false puts a group's ${groupSize} trajectories of up to ${turns} turns (custom_envs.${tag}.max_steps) in one workflow history: about ${groupSize * turns * EVENTS_PER_TURN} events, expected at most ${GROUP_HISTORY_EVENTS} (Temporal fails a history at 51,200); set it to true, or use smaller groups or fewer turns` });
    }
  }
}
