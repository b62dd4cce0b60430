/**
 * A run id names the run's workflow and its data: <run_dir>/<run id>
 * (metrics, checkpoints) and <store>/<run id> (samples, batches). A new run
 * must not write where another run's data is, so an id that already has data
 * is refused before anything starts. A resumed run gets its own id too: the
 * run it resumes keeps its data, and its abandoned groups (which signal the
 * workflow id) cannot report to the new run.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, type LoadedConfig } from '../configs';
import { runDataDir } from '../core';

const RUN_ID = /^[A-Za-z0-9_.-]+$/;

/** Anything at `dir` but nothing or an empty directory (a run that failed before writing leaves one). */
function hasData(dir: string): boolean {
  const found = statSync(dir, { throwIfNoEntry: false });
  return found !== undefined && (!found.isDirectory() || readdirSync(dir).length > 0);
}

/** Throws ConfigError (exit 2) naming --run-id unless `runId` is a usable name with no data yet. */
export function checkNewRunId({ derived }: LoadedConfig, runId: string): void {
  const refuse = (expected: string) => {
    throw new ConfigError('--run-id', [{ path: '--run-id', given: runId, expected }]);
  };
  // It becomes a directory name and a store key segment.
  if (!RUN_ID.test(runId) || runId === '.' || runId === '..') refuse('letters, digits, ".", "_" or "-" (one path segment)');
  const dataDir = runDataDir(derived.run_dir, runId);
  // A bucket store is not listed here (this check is synchronous); the run directory holds the run's records either way.
  const storeDir = derived.sample_store.kind === 'dir' ? derived.sample_store.path : undefined;
  const store = storeDir === undefined ? '..' : path.relative(dataDir, storeDir);
  if (!store.startsWith('..') && !path.isAbsolute(store)) refuse(`another id: ${dataDir} would be the sample store's directory (${storeDir})`);
  for (const dir of [dataDir, ...(storeDir === undefined ? [] : [path.join(storeDir, runId)])]) {
    if (hasData(dir)) refuse(`an id with no data yet: ${dir} holds an earlier run's data. Choose another --run-id; to continue that run, --resume-from one of its checkpoints (the resumed run gets a new id)`);
  }
}
