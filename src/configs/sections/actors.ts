/** Models and generation (ROLL: actor_train / actor_infer); model_args: ../model-args.ts. */
import { z } from 'zod';
import { ModelArgs } from '../model-args';
import { count } from './fields';

/** python-engines' trainer schedules (roles/trainer/schedule.py). */
export const LR_SCHEDULER_TYPES = ['constant', 'constant_with_warmup', 'linear', 'cosine'] as const;

export const ActorTrainSchema = z
  .strictObject({
    model_args: ModelArgs.prefault({ model_name_or_path: 'tiny:default' }),
    training_args: z
      .strictObject({
        learning_rate: z.number().positive().default(1e-6).describe('AdamW learning rate.'),
        weight_decay: z.number().min(0).default(0).describe('AdamW weight decay.'),
        per_device_train_batch_size: count(1).default(1).describe('Micro-batch size per forward/backward pass.'),
        gradient_accumulation_steps: count(1).optional().describe('Micro-batches accumulated before one optimizer step; unset: one optimizer step per pass over the batch.'),
        max_grad_norm: z.number().positive().default(1.0).describe('Gradient clipping norm.'),
        lr_scheduler_type: z
          .enum(LR_SCHEDULER_TYPES)
          .default('constant')
          .describe('Learning-rate schedule over train steps (transformers\' names): constant, constant_with_warmup, or linear / cosine decay to 0 at max_steps; every optimizer update of train step k uses step k\'s rate.'),
        warmup_steps: count(0).optional().describe('Train steps of linear warmup from 0 to learning_rate (step 0 trains at rate 0, as in transformers); needs a schedule with warmup.'),
        warmup_ratio: z.number().min(0).max(1).optional().describe('Warmup as a share of max_steps: ⌈warmup_ratio × max_steps⌉ steps (transformers\' rule); not with warmup_steps.'),
      })
      .prefault({})
      .describe('Optimizer settings of the trainer.'),
  })
  .prefault({})
  .describe('The policy being trained (trainer role).');

export const ActorInferSchema = z
  .strictObject({
    model_args: ModelArgs.optional().describe('Model the inference servers load, and its dtype; defaults to actor_train.model_args. LoRA settings always come from actor_train.model_args (the servers apply the trainer\'s adapters): here they may only repeat them.'),
    generating_args: z
      .strictObject({
        max_new_tokens: count(1).default(512).describe('Most tokens generated per response (per turn in agentic envs).'),
        temperature: z.number().min(0).default(1.0).describe('Sampling temperature; 0 is greedy.'),
        top_p: z.number().gt(0).max(1).default(1.0).describe('Nucleus sampling mass.'),
        top_k: z
          .number()
          .int()
          .min(-1)
          .refine((k) => k !== 0, 'top_k 0 keeps no token; -1 disables top-k')
          .default(-1)
          .describe('Sample among the k most likely tokens only (before top_p), on every inference backend (sim: no distribution, ignored); -1 disables it.'),
      })
      .prefault({})
      .describe('Sampling parameters for generation.'),
  })
  .prefault({})
  .describe('The rollout policy (inference role).');


/** Warmup in train steps: warmup_steps, or ⌈warmup_ratio × max_steps⌉ as transformers counts it. */
export function warmupSteps(c: { actor_train: z.output<typeof ActorTrainSchema>; max_steps: number }): number {
  const t = c.actor_train.training_args;
  return t.warmup_steps ?? Math.ceil((t.warmup_ratio ?? 0) * c.max_steps);
}
