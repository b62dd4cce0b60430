/** Reads a checkpoint manifest for `rollflow run --resume-from`, from a directory or a bucket, and checks it fits the config. */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { CheckpointManifest } from '../activities';
import { ConfigError, type LoadedConfig } from '../configs';
import { CHECKPOINT_MANIFEST, isObjectRef } from '../core';
import { S3SampleStore } from '../store';

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

/**
 * The manifest's own location and its JSON. `where` is a checkpoint directory or its manifest.json, or the same in a
 * bucket (s3://<bucket>/<run>/checkpoints/step-N, what a run with a bucket store writes), read with the standard AWS
 * variables and files and verified against its checksum as every object is.
 */
async function readManifest(where: string): Promise<{ file: string; raw: unknown }> {
  if (isObjectRef(where)) {
    const ref = where.replace(/\/+$/, '');
    const checkpoint = path.posix.basename(ref) === CHECKPOINT_MANIFEST ? path.posix.dirname(ref) : ref;
    return { file: `${checkpoint}/${CHECKPOINT_MANIFEST}`, raw: await S3SampleStore.at(checkpoint).get(CHECKPOINT_MANIFEST) };
  }
  const file = (await stat(where).catch(() => undefined))?.isDirectory() ? path.join(where, CHECKPOINT_MANIFEST) : where;
  return { file, raw: JSON.parse(await readFile(file, 'utf8')) };
}

/** Throws ConfigError (exit 2) naming what does not fit, or what could not be read. */
export async function readCheckpoint(where: string, { config, hash }: LoadedConfig, warn: (line: string) => void): Promise<CheckpointManifest> {
  let file: string, raw: unknown;
  try {
    ({ file, raw } = await readManifest(where));
  } catch (e) {
    throw new ConfigError('--resume-from', [{ path: '--resume-from', given: where, expected: `a checkpoint (a directory or an s3:// ref) with a readable ${CHECKPOINT_MANIFEST} (${(e as Error).message})` }]);
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
