/**
 * Exactly-once, shown as bits (docs/exactly-once.md): what a finished run left
 * that must not depend on faults at α = 0 — the hash of every weights export
 * v1…vN (weightsHash, read from the safetensors files, not from the trainer)
 * and every batch file (each sample's prompt, tokens, logprobs and reward: the
 * actions the env was sent and what it answered) — and the comparison of a
 * faulted run's with the fault-free run's of the same seed.
 *
 * The trainer overwrites <export_dir>/v<N> at each run, so a run's bits are
 * read as soon as it ends, before the next run on the stack exports.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { LoadedConfig } from '../configs';
import { batchDir, isObjectRef, storeDirectory } from '../core';
import { launchedEngines, trainerExportDir } from '../stack/engines';
import { weightsHash } from './state-hash';

export interface RunBits {
  runId: string;
  /** weightsHash of v1…vN (index i is version i + 1). */
  versionHashes: string[];
  /** Each step's batch file, with the run id taken out of its sample keys. */
  batches: string[];
}

export interface BitsComparison {
  weightsEqual: boolean;
  /** The first version whose export differs (or exists in one run only). */
  firstDifferentVersion?: number;
  batchesEqual: boolean;
  firstDifferentStep?: number;
}

/** The export directory of the config's launched trainer; its weights files are read here, so not a bucket. */
export function exportDirOf(loaded: LoadedConfig): string {
  const trainer = launchedEngines(loaded).find((e) => e.role === 'trainer');
  if (!trainer) throw new Error('exactly-once checks need a trainer the stack launches (engines.trainer.launch)');
  const dir = trainerExportDir(trainer);
  if (isObjectRef(dir)) throw new Error(`exactly-once checks read the weights exports' files from a directory; this trainer exports to the bucket ${dir} (engines.trainer.options.export_dir, or sample_store.kind s3)`);
  return dir;
}

/** What run `runId` (now finished, `versions` weight versions trained) left: read it before another run exports. */
export function readRunBits(loaded: LoadedConfig, runId: string, versions: number): RunBits {
  const exports = exportDirOf(loaded);
  const versionHashes = Array.from({ length: versions }, (_, i) => weightsHash(path.join(exports, `v${i + 1}`)));
  const dir = path.join(storeDirectory(loaded.derived.sample_store, 'rollflow chaos'), batchDir(runId));
  const files = existsSync(dir) ? readdirSync(dir).sort() : [];
  const batches = files.map((f) => readFileSync(path.join(dir, f), 'utf8').split(runId).join('<run>'));
  return { runId, versionHashes, batches };
}

const firstDifference = <T>(a: T[], b: T[]): number | undefined => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) return i;
  return undefined;
};

export function compareBits(clean: RunBits, faulted: RunBits): BitsComparison {
  const v = firstDifference(clean.versionHashes, faulted.versionHashes);
  const s = firstDifference(clean.batches, faulted.batches);
  return { weightsEqual: v === undefined, ...(v !== undefined ? { firstDifferentVersion: v + 1 } : {}), batchesEqual: s === undefined, ...(s !== undefined ? { firstDifferentStep: s } : {}) };
}
