/**
 * The background worker of `rollflow dev up`: `rollflow worker` in its own
 * process. It is ready when Temporal lists it as a poller of the task queue.
 */
import { rmSync, statSync } from 'node:fs';
import { readJsonFile } from './files';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { taskQueuePollers } from '../client/run-handle';
import type { LoadedConfig } from '../configs';
import { cliEntry, logsDir, pidsDir, stateDir } from '../paths';
import { ensureStarted, isAlive, livePid, startDetached, stopProcess, waitUntil, type ManagedProcess } from './processes';

export function workerProcess({ config }: LoadedConfig): ManagedProcess {
  const name = `worker-${config.temporal.task_queue}`;
  return { name, pidFile: path.join(pidsDir(), `${name}.pid`), logFile: path.join(logsDir(), `${name}.log`), marker: 'cli/index.js worker' };
}

/**
 * The file a live worker rewrites every couple of seconds from its event loop (src/worker/liveness.ts):
 * how a supervisor or a Kubernetes exec probe tells a stopped or wedged worker from a working one.
 */
export const workerAliveFile = ({ config }: LoadedConfig, state = stateDir()) => path.join(pidsDir(state), `worker-${config.temporal.task_queue}.alive`);

/** Identities of the processes polling the config's workflow task queue. */
export const pollers = (client: Client, { config }: LoadedConfig) => taskQueuePollers(client, config.temporal.namespace, config.temporal.task_queue);

export async function startWorker(client: Client, loaded: LoadedConfig, configArgs: string[]): Promise<string> {
  const proc = workerProcess(loaded);
  // A rebuilt dist/ or other connection/engine/store settings mean the running worker is stale; run-level
  // settings (α, steps, …) travel in each run's plan, so they do not.
  const { temporal, engines } = loaded.config;
  const fingerprint = JSON.stringify({ temporal, engines, store: loaded.derived.sample_store, built: statSync(cliEntry).mtimeMs });
  const { pid, action } = await ensureStarted(proc, fingerprint, () => startDetached(proc, process.execPath, [cliEntry, 'worker', ...configArgs], process.env, fingerprint));
  if (action === 'already running') return `${proc.name}: already running (pid ${pid})`;
  await waitUntil(proc, async () => ((await pollers(client, loaded)).some((id) => id.startsWith(`${pid}@`)) ? true : undefined), 180_000);
  return `${proc.name}: ${action === 'restarted' ? 'restarted (code rebuilt or config changed)' : 'started'} (pid ${pid}) on task queue ${loaded.config.temporal.task_queue}`;
}

export async function workerStatus(client: Client | undefined, loaded: LoadedConfig): Promise<{ ok: boolean; line: string }> {
  const proc = workerProcess(loaded);
  const pid = livePid(proc);
  if (pid === undefined) return { ok: false, line: `${proc.name}: stopped` };
  const polling = client ? (await pollers(client, loaded).catch(() => [])).some((id) => id.startsWith(`${pid}@`)) : false;
  const beat = readWorkerBeat(loaded);
  const waiting = beat?.pid === pid && beat.waitingFor?.length ? `; waiting for ${beat.waitingFor.join(', ')}` : '';
  const hung = workerBeatProblem(loaded, pid);
  return { ok: polling && !hung, line: `${proc.name}: ${polling ? 'running' : 'not polling'} pid=${pid} task_queue=${loaded.config.temporal.task_queue}${hung ? `; ${hung}` : ''}${waiting}` };
}

export async function stopWorker(loaded: LoadedConfig): Promise<'stopped' | 'not running'> {
  const stopped = await stopProcess(workerProcess(loaded));
  rmSync(workerAliveFile(loaded), { force: true }); // a stopped worker's last beat must not read as a live one's
  return stopped;
}

/** What the worker writes to its alive file. */
export interface WorkerBeat {
  pid: number;
  /** When it was written (ms since the epoch). */
  at: number;
  /** How late the beat timer fired: a loop blocked by synchronous work shows here first. */
  loopLagMs: number;
  /** The SDK's Worker.getStatus(): run state and work in flight. */
  runState: string;
  activitiesInFlight: number;
  activationsInFlight: number;
  /** The engines its calls wait for because they cannot be reached (src/activities/engine-wait.ts). */
  waitingFor: string[];
}

/** A worker whose last beat is older than this is taken for hung by the supervisor (it beats every 2 s). */
export const WORKER_BEAT_STALE_MS = 10_000;

/**
 * undefined when the worker beat within WORKER_BEAT_STALE_MS; otherwise why it counts as hung. `pid`: the process
 * that must have written the beat (the supervisor's); without it (an exec probe in a container, where no pid file
 * is kept), the beat's own pid must be alive.
 */
export const readWorkerBeat = (loaded: LoadedConfig) => readJsonFile<WorkerBeat>(workerAliveFile(loaded));

export function workerBeatProblem(loaded: LoadedConfig, pid?: number, now = Date.now(), staleMs = WORKER_BEAT_STALE_MS): string | undefined {
  const beat = readWorkerBeat(loaded);
  if (!beat) return `no readable alive file ${workerAliveFile(loaded)}`;
  if (pid !== undefined && beat.pid !== pid) return `the alive file is from pid ${beat.pid}, not ${pid} (it has not beaten yet)`;
  if (pid === undefined && !isAlive(beat.pid)) return `the worker that last beat (pid ${beat.pid}) is not running`;
  const age = now - beat.at;
  return age <= staleMs ? undefined : `no beat for ${(age / 1000).toFixed(1)} s (stopped, or its event loop is blocked)`;
}
