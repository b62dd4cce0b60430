/** Reads a checkpoint manifest for `rollflow run --resume-from`, and checks it fits the config. */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { CheckpointManifest } from '../activities';
import { ConfigError, type LoadedConfig } from '../configs';

const Manifest = z.object({
  run_id: z.string(),
  step: z.number().int().min(0),
  version: z.number().int().min(0),
  consumed: z.array(z.tuple([z.number().int().min(0), z.array(z.tuple([z.number().int(), z.number().int()]))])),
  seed: z.number().int(),
  dataset_size: z.number().int().min(1),
  dataset_domains: z.array(z.object({ name: z.string(), rows: z.number().int().min(0) })).optional(),
  config_hash: z.string(),
  trainer_checkpoint: z.string(),
});

const usesDatasetFile = (config: LoadedConfig['config']) => Object.values(config.custom_envs).some((e) => e.env_type === 'dataset');

/** `where` is a checkpoint directory or its manifest.json. Throws ConfigError (exit 2) naming what does not fit. */
export function readCheckpoint(where: string, { config, hash }: LoadedConfig, warn: (line: string) => void): CheckpointManifest {
  const file = statSync(where, { throwIfNoEntry: false })?.isDirectory() ? path.join(where, 'manifest.json') : where;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ConfigError('--resume-from', [{ path: '--resume-from', given: where, expected: `a checkpoint directory with a readable manifest.json (${(e as Error).message})` }]);
  }
  const parsed = Manifest.safeParse(raw);
  if (!parsed.success) throw new ConfigError(file, parsed.error.issues.map((i) => ({ path: i.path.join('.'), given: undefined, expected: i.message })));
  const m = parsed.data;
  // Consumed positions index the seeded epoch order: another seed or dataset size would skip the wrong prompts.
  const mismatch = [
    ...(m.seed !== config.seed ? [{ path: 'seed', given: config.seed, expected: `${m.seed}, the checkpoint's seed` }] : []),
    // A file dataset's size is checked by the run itself, against the file's index.
    ...(m.dataset_size !== config.dataset_size && !usesDatasetFile(config) ? [{ path: 'dataset_size', given: config.dataset_size, expected: `${m.dataset_size}, the checkpoint's dataset size` }] : []),
    ...(m.step >= config.max_steps ? [{ path: 'max_steps', given: config.max_steps, expected: `more than the checkpoint's step ${m.step}` }] : []),
  ];
  if (mismatch.length) throw new ConfigError(`${file} and the config`, mismatch);
  if (m.config_hash !== hash) warn(`rollflow: resuming with a config that differs from checkpoint ${file}'s (hash ${m.config_hash.slice(0, 12)} -> ${hash.slice(0, 12)})`);
  return m;
}
