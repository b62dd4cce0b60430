// model_args: dtype and LoRA keys (ROLL's names, verl's and TRL's aliases), and the checks that
// make every one of them reach an engine that acts on it.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/configs';
import { launchedEngines } from '../../src/stack/engines';

const torch = { inference: [{ url: 'http://127.0.0.1:8301', backend: 'torch' }], trainer: { url: 'http://127.0.0.1:8401', backend: 'torch' } };

function problemsOf(raw: Record<string, unknown>) {
  try {
    parseConfig(raw, 'test', '/work');
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

const engineOf = (raw: Record<string, unknown>, role: string) => launchedEngines(parseConfig(raw, 'test', '/work')).find((e) => e.role === role)!;

describe('model_args dtype and LoRA', () => {
  it('passes LoRA settings to the trainer and the inference servers alike, with the key each came from', () => {
    const raw = { actor_train: { model_args: { model_name_or_path: 'tiny:small', lora_rank: 8, lora_alpha: 16, lora_target: 'q_proj,v_proj', dtype: 'bf16' } }, engines: torch };
    const trainer = engineOf(raw, 'trainer');
    const inference = engineOf(raw, 'inference');
    expect(trainer.options).toMatchObject({ model: 'tiny:small', dtype: 'bf16', lora_rank: 8, lora_alpha: 16, lora_target: 'q_proj,v_proj' });
    expect(inference.options).toEqual({ model: 'tiny:small', dtype: 'bf16', lora_rank: 8, lora_alpha: 16, lora_target: 'q_proj,v_proj' });
    expect(inference.optionPaths).toMatchObject({ lora_rank: 'actor_train.model_args.lora_rank', lora_target: 'actor_train.model_args.lora_target', dtype: 'actor_train.model_args.dtype' });
  });

  it('accepts verl\'s target_modules and TRL\'s lora_r for the same settings, and refuses both names at once', () => {
    const raw = { actor_train: { model_args: { model_name_or_path: 'tiny:default', lora_r: 4, target_modules: ['q_proj', 'k_proj'] } }, engines: torch };
    const trainer = engineOf(raw, 'trainer');
    expect(trainer.options).toMatchObject({ lora_rank: 4, lora_target: ['q_proj', 'k_proj'] });
    expect(trainer.optionPaths).toMatchObject({ lora_rank: 'actor_train.model_args.lora_r', lora_target: 'actor_train.model_args.target_modules' });
    expect(problemsOf({ actor_train: { model_args: { model_name_or_path: 'tiny:default', lora_rank: 4, lora_r: 4 } }, engines: torch })).toEqual([
      { path: 'actor_train.model_args.lora_r', given: 4, expected: 'the same setting as lora_rank; give one of the two' },
    ]);
  });

  it('lora_rank 0 or unset is full fine-tuning: no LoRA option reaches an engine, and alpha or target alone is an error', () => {
    for (const lora of [{}, { lora_rank: 0 }]) {
      const raw = { actor_train: { model_args: { model_name_or_path: 'tiny:default', ...lora } }, engines: torch };
      expect(Object.keys(engineOf(raw, 'trainer').options)).not.toContain('lora_rank');
      expect(Object.keys(engineOf(raw, 'inference').options)).toEqual(['model']);
    }
    expect(problemsOf({ actor_train: { model_args: { model_name_or_path: 'tiny:default', lora_alpha: 16, target_modules: 'all-linear' } }, engines: torch }).map((p) => [p.path, p.expected])).toEqual([
      ['actor_train.model_args.lora_alpha', 'a LoRA setting, but lora_rank is 0 or unset (full fine-tuning); set lora_rank > 0 or remove it'],
      ['actor_train.model_args.target_modules', 'a LoRA setting, but lora_rank is 0 or unset (full fine-tuning); set lora_rank > 0 or remove it'],
    ]);
  });

  it('a wrong dtype names the key, the value and the values allowed', () => {
    expect(problemsOf({ actor_train: { model_args: { model_name_or_path: 'tiny:default', dtype: 'fp64' } }, engines: torch })).toEqual([
      { path: 'actor_train.model_args.dtype', given: 'fp64', expected: 'expected one of "fp32", "bf16", "fp16", "float32", "bfloat16", "float16"' },
    ]);
  });

  it('actor_infer may set its own dtype; its LoRA settings must equal the trainer\'s, on the same base model', () => {
    const train = { model_name_or_path: 'tiny:default', lora_rank: 8 };
    const own = engineOf({ actor_train: { model_args: { ...train, dtype: 'bf16' } }, actor_infer: { model_args: { model_name_or_path: 'tiny:default', dtype: 'fp16' } }, engines: torch }, 'inference');
    expect(own.options).toEqual({ model: 'tiny:default', dtype: 'fp16', lora_rank: 8 });
    expect(own.optionPaths).toMatchObject({ dtype: 'actor_infer.model_args.dtype', lora_rank: 'actor_train.model_args.lora_rank' });
    expect(problemsOf({ actor_train: { model_args: train }, actor_infer: { model_args: { model_name_or_path: 'tiny:default', lora_rank: 8 } }, engines: torch })).toEqual([]);
    expect(problemsOf({ actor_train: { model_args: train }, actor_infer: { model_args: { model_name_or_path: 'tiny:default', lora_r: 4 } }, engines: torch }).map((p) => p.path)).toEqual(['actor_infer.model_args.lora_r']);
    expect(problemsOf({ actor_train: { model_args: train }, actor_infer: { model_args: { model_name_or_path: 'tiny:small' } }, engines: torch }).map((p) => p.path)).toEqual(['actor_infer.model_args.model_name_or_path']);
  });

  it('refuses LoRA or dtype where no engine would act on it', () => {
    const lora = { model_args: { model_name_or_path: 'tiny:default', lora_rank: 8 } };
    expect(problemsOf({ actor_train: lora, engines: { ...torch, trainer: { url: 'http://127.0.0.1:8401', backend: 'sim' } } }).map((p) => [p.path, p.expected])).toEqual([
      ['actor_train.model_args.lora_rank', 'LoRA is trained by the torch trainer only; engines.trainer.backend is "sim"'],
    ]);
    expect(problemsOf({ actor_train: lora, engines: { ...torch, inference: [{ url: 'http://127.0.0.1:8301', backend: 'vllm' }] } }).map((p) => p.expected)).toEqual([
      'the inference servers apply the trainer\'s LoRA adapters, which only the torch backend does; engines.inference[0].backend is "vllm"',
    ]);
    const bf16 = { model_args: { model_name_or_path: 'tiny:default', dtype: 'bf16' } };
    expect(problemsOf({ actor_train: bf16 }).map((p) => p.path)).toEqual(['actor_train.model_args.dtype']); // sim engines only
    expect(problemsOf({ actor_train: bf16, engines: { inference: torch.inference } })).toEqual([]); // the torch inference server takes it
    expect(problemsOf({ actor_infer: bf16 }).map((p) => p.path)).toEqual(['actor_infer.model_args.dtype']);
  });
});
