/**
 * The background worker of `rollflow dev up`: `rollflow worker` in its own
 * process. It is ready when Temporal lists it as a poller of the task queue.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { taskQueuePollers } from '../client/run-handle';
import type { LoadedConfig } from '../configs';
import { cliEntry, logsDir, pidsDir } from '../paths';
import { ensureStarted, livePid, startDetached, stopProcess, waitUntil, type ManagedProcess } from './processes';

export function workerProcess({ config }: LoadedConfig): ManagedProcess {
  const name = `worker-${config.temporal.task_queue}`;
  return { name, pidFile: path.join(pidsDir(), `${name}.pid`), logFile: path.join(logsDir(), `${name}.log`), marker: 'cli/index.js worker' };
}

/** Identities of the processes polling the config's workflow task queue. */
export const pollers = (client: Client, { config }: LoadedConfig) => taskQueuePollers(client, config.temporal.namespace, config.temporal.task_queue);

export async function startWorker(client: Client, loaded: LoadedConfig, configArgs: string[]): Promise<string> {
  const proc = workerProcess(loaded);
  // A rebuilt dist/ or other connection/engine/store settings mean the running worker is stale; run-level
  // settings (α, steps, …) travel in each run's plan, so they do not.
  const { temporal, engines } = loaded.config;
  const fingerprint = JSON.stringify({ temporal, engines, store: loaded.derived.sample_store_path, built: statSync(cliEntry).mtimeMs });
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
  return { ok: polling, line: `${proc.name}: ${polling ? 'running' : 'not polling'} pid=${pid} task_queue=${loaded.config.temporal.task_queue}` };
}

export const stopWorker = (loaded: LoadedConfig) => stopProcess(workerProcess(loaded));
