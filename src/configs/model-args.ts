/**
 * How the policy model is loaded (model_args: dtype and LoRA, ROLL's names),
 * with the peers' other names for the same keys resolved in this one place:
 * lora_r (TRL) for lora_rank, target_modules (verl) for lora_target.
 *
 * The inference servers apply the trainer's LoRA adapters, so both take the
 * LoRA settings of actor_train.model_args; actor_infer.model_args may repeat
 * them but not differ (checkModelArgs).
 */
import { z } from 'zod';

/** ROLL's dtype names, and verl's / torch's for the same three. */
export const DTYPES = ['fp32', 'bf16', 'fp16', 'float32', 'bfloat16', 'float16'] as const;

/** Each ROLL key, and the other names accepted for it. */
export const MODEL_ARG_ALIASES = { lora_rank: ['lora_r'], lora_target: ['target_modules'] } as const;

const loraTarget = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);

export const ModelArgs = z
  .strictObject({
    model_name_or_path: z.string().min(1).describe('Hugging Face model directory, or "tiny:<name>" for a small model built from code (no download).'),
    dtype: z
      .enum(DTYPES)
      .optional()
      .describe('Parameter dtype the torch engines load the model in: fp32 (the default), bf16, fp16 (ROLL), or float32 / bfloat16 / float16. The torch trainer refuses fp16 on CPU (no loss scaling).'),
    lora_rank: z.number().int().min(0).optional().describe('LoRA rank r (ROLL, verl): train a LoRA adapter through peft, base weights frozen; 0 or unset fine-tunes every weight. torch engines only.'),
    lora_r: z.number().int().min(0).optional().describe('TRL\'s name for lora_rank.'),
    lora_alpha: z.number().positive().optional().describe('LoRA scale α: the adapter\'s update is scaled by α / r; default 2·lora_rank (ROLL).'),
    lora_target: loraTarget
      .optional()
      .describe('Modules LoRA adapts (ROLL): names separated by commas or a list, matched as module-name suffixes (q_proj,v_proj); a regex if it holds any of * $ | ( ; all or all-linear: every linear layer but the output layer (the default).'),
    target_modules: loraTarget.optional().describe('verl\'s name for lora_target.'),
  })
  .superRefine((args, ctx) => {
    for (const [key, aliases] of Object.entries(MODEL_ARG_ALIASES)) {
      for (const alias of aliases) {
        if (args[alias] !== undefined && args[key as keyof typeof args] !== undefined) {
          ctx.addIssue({ code: 'custom', path: [alias], message: `the same setting as ${key}; give one of the two` });
        }
      }
    }
    const lora = loraOf(args);
    if (lora.rank.value === 0) {
      for (const s of [lora.alpha, lora.target]) {
        if (s) ctx.addIssue({ code: 'custom', path: [s.key], message: `a LoRA setting, but ${lora.rank.key} is 0 or unset (full fine-tuning); set ${lora.rank.key} > 0 or remove it` });
      }
    }
  })
  .describe('Which model the worker loads, in which dtype, with which LoRA adapter.');

export type ModelArgsValue = z.output<typeof ModelArgs>;

/** A setting and the model_args key it was given under (for error messages and option paths). */
export interface Given<T> {
  value: T;
  key: string;
}

export interface LoraArgs {
  rank: Given<number>;
  alpha?: Given<number>;
  target?: Given<string | string[]>;
}

function given<T>(args: Record<string, unknown>, key: string, aliases: readonly string[] = []): Given<T> | undefined {
  const found = [key, ...aliases].find((k) => args[k] !== undefined);
  return found === undefined ? undefined : { value: args[found] as T, key: found };
}

/** The LoRA settings of one model_args, aliases resolved; rank 0 (key lora_rank) when unset. */
export function loraOf(args: ModelArgsValue): LoraArgs {
  const raw = args as Record<string, unknown>;
  return {
    rank: given<number>(raw, 'lora_rank', MODEL_ARG_ALIASES.lora_rank) ?? { value: 0, key: 'lora_rank' },
    alpha: given<number>(raw, 'lora_alpha'),
    target: given<string | string[]>(raw, 'lora_target', MODEL_ARG_ALIASES.lora_target),
  };
}

/** True when `a` and `b` set the same LoRA (by value, whichever names they use). */
export function sameLora(a: LoraArgs, b: LoraArgs): boolean {
  return a.rank.value === b.rank.value && a.alpha?.value === b.alpha?.value && JSON.stringify(a.target?.value) === JSON.stringify(b.target?.value);
}

/** Whether a model_args sets any LoRA key at all (under any name). */
export function setsLora(args: ModelArgsValue): boolean {
  const raw = args as Record<string, unknown>;
  const l = loraOf(args);
  return given(raw, 'lora_rank', MODEL_ARG_ALIASES.lora_rank) !== undefined || l.alpha !== undefined || l.target !== undefined;
}
