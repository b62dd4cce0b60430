/** The python-engines servers a config asks rollflow to launch (engines.*.launch: true): their processes. */
import path from 'node:path';
import { describeStore, isObjectRef, type EngineRole, type SampleStoreLocation } from '../core';
import type { LoadedConfig } from '../configs';
import { engineSpecs, type EngineSpec } from '../configs/engines';
import { engineHealth } from '../gpu-bridge';
import { logsDir, pidsDir, pythonBin, pythonEnginesEnv, stateDir } from '../paths';
import { adoptOrStop, ensureStarted, livePid, startDetached, stopProcess, waitUntil, type ManagedProcess } from './processes';

/** A launched engine: what the config asks for, and the process that serves it. */
export interface LaunchedEngine extends EngineSpec {
  process: ManagedProcess;
  /** The run's sample store: when it is a bucket, a launched trainer exports its weights into it and env servers keep their snapshots there. */
  sampleStore: SampleStoreLocation;
}

/** The process of the engine serving `url` in `role`, with its pid and log files under the state dir `state`. */
export function engineProcess(role: EngineRole, url: string, state = stateDir()): ManagedProcess {
  const name = `engine-${role}-${new URL(url).port}`;
  return { name, pidFile: path.join(pidsDir(state), `${name}.pid`), logFile: path.join(logsDir(state), `${name}.log`), marker: 'rollflow_engines serve' };
}

export const launchedEngines = ({ config, derived }: Pick<LoadedConfig, 'config' | 'derived'>): LaunchedEngine[] =>
  engineSpecs(config).map((e) => ({ ...e, process: engineProcess(e.role, e.url), sampleStore: derived.sample_store }));

/**
 * The step log of a launched trainer (python-engines roles/trainer/step_log.py): its `step_log` option, else a file
 * under the state dir named after the process, which outlives the process so a restart appends to it.
 */
export const trainerStepLog = (e: LaunchedEngine, state = stateDir()): string =>
  typeof e.options.step_log === 'string' ? e.options.step_log : path.join(state, 'trainer-steps', `${e.process.name}.jsonl`);

/**
 * Where a launched trainer writes its weights exports (v<N>/) unless the config says otherwise (its export_dir): with a
 * bucket store, in the bucket, s3://<bucket>/<prefix>weights/<process>, so inference servers on hosts that share no disk
 * with it pull them (docs/object-store.md); else under the state dir.
 */
export function trainerExportDir(e: LaunchedEngine, state = stateDir()): string {
  if (typeof e.options.export_dir === 'string') return e.options.export_dir;
  const store = e.sampleStore;
  return store.kind === 's3' ? `${describeStore(store)}weights/${e.process.name}` : path.join(state, 'weights', e.process.name);
}

/**
 * Where launched env servers keep episode snapshots unless the config says otherwise (their snapshot_dir): with a
 * bucket store, s3://<bucket>/<prefix>env-snapshots, one place for all of them, so a server on any host resumes an
 * episode another one saved; else nothing is passed (the system temp dir, shared by the servers of one host).
 */
export const envSnapshotDir = (e: LaunchedEngine): string | undefined => (e.sampleStore.kind === 's3' ? `${describeStore(e.sampleStore)}env-snapshots` : undefined);

/**
 * What a launched engine writes under the state dir unless the config says otherwise: a trainer its exported
 * weights (or, exporting to a bucket, each export before its upload), its step log, and with a bucket store each
 * saved state before its upload and each loaded one after its download (the run names s3:// states then:
 * RunPlan.bucketRunDir); an inference server the exports it pulls from a bucket; an env server its action log (one line
 * per applied step: the record that none was applied twice), and with a bucket store its snapshots go to the bucket.
 */
export function stateDirOptions(e: LaunchedEngine, state = stateDir()): Record<string, unknown> {
  const weights = path.join(state, 'weights', e.process.name);
  const bucket = e.sampleStore.kind === 's3';
  if (e.role === 'trainer') {
    const exportDir = trainerExportDir(e, state);
    const states = bucket ? { state_scratch_dir: path.join(state, 'trainer-state-scratch', e.process.name) } : {};
    return { export_dir: exportDir, ...(isObjectRef(exportDir) ? { export_scratch_dir: weights } : {}), ...states, step_log: trainerStepLog(e, state) };
  }
  if (e.role === 'inference') return { weights_cache_dir: path.join(state, 'weights-cache', e.process.name) };
  if (e.role === 'env') {
    const snapshots = envSnapshotDir(e);
    return { action_log: path.join(state, 'env-actions', `${e.process.name}.jsonl`), ...(snapshots ? { snapshot_dir: snapshots } : {}) };
  }
  return {};
}

export async function startEngine(e: LaunchedEngine): Promise<string> {
  const { hostname, port } = new URL(e.listen);
  const options = { ...stateDirOptions(e), ...e.options };
  const args = ['-m', 'rollflow_engines', 'serve', '--role', e.role, '--backend', e.backend, '--host', hostname.replace(/^\[|\]$/g, ''), '--port', port];
  for (const [k, v] of Object.entries(options)) args.push('--option', `${k}=${JSON.stringify(v)}`);
  if (livePid(e.process) === undefined) {
    // Something answers on the port though the pid file names no live server: an engine of ours the pid file lost.
    const answering = await engineHealth(e.listen, { timeoutMs: 2_000 }).then((h) => h.pid, () => undefined);
    if (answering !== undefined && (await adoptOrStop(e.process, answering, args, JSON.stringify(args))) !== undefined) {
      return `${e.process.name}: already running (pid ${answering}, found on its port and taken back into its pid file)`;
    }
  }
  const { pid, action } = await ensureStarted(e.process, JSON.stringify(args), () => startDetached(e.process, pythonBin(), args, pythonEnginesEnv(), JSON.stringify(args)));
  if (action === 'already running') return `${e.process.name}: already running (pid ${pid})`;
  // A model-backed server may first build its model (a tiny model's warm-start takes minutes on 2
  // loaded cores); it is watched all along, so a crash still fails fast with its log.
  const readyWithinMs = e.backend === 'sim' || e.role === 'env' ? 120_000 : 900_000;
  await waitUntil(e.process, () => engineHealth(e.listen, { timeoutMs: 2_000 }), readyWithinMs);
  return `${e.process.name}: ${action === 'restarted' ? 'restarted with new settings' : 'started'} (pid ${pid}) at ${e.listen}${e.listen === e.url ? '' : ` (the run calls ${e.url})`}`;
}

export async function engineStatus(e: LaunchedEngine): Promise<{ ok: boolean; line: string }> {
  const pid = livePid(e.process);
  if (pid === undefined) return { ok: false, line: `${e.process.name}: stopped` };
  try {
    const h = await engineHealth(e.listen, { timeoutMs: 2_000 });
    return { ok: true, line: `${e.process.name}: running pid=${pid} url=${e.listen} backend=${h.backend}` };
  } catch (err) {
    return { ok: false, line: `${e.process.name}: unhealthy pid=${pid} (${(err as Error).message})` };
  }
}

export const stopEngine = (e: LaunchedEngine) => stopProcess(e.process);
