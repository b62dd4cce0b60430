/**
 * The worker's beat: every 2 s, from its event loop, it rewrites its own
 * alive file (named by its pid; src/stack/worker.ts reads it) with the beat
 * timer's lag and the SDK's count of work in flight. A stopped worker (SIGSTOP) or one whose
 * loop is blocked writes nothing, which the supervisor and a Kubernetes exec
 * probe (`rollflow probe worker`) see within WORKER_BEAT_STALE_MS. Under
 * systemd (NOTIFY_SOCKET set) the same beat feeds its watchdog. Each beat
 * also brings back a supervisor that died while wanted, so the two watch
 * each other.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { Worker } from '@temporalio/worker';
import { enginesWaitedFor } from '../activities/engine-wait';
import type { LoadedConfig } from '../configs';
import type { Logger } from '../logging';
import { writeFileAtomic } from '../stack/files';
import { respawnSupervisorIfWanted } from '../stack/supervisor';
import { removeDeadWorkerBeats, workerAliveFile, type WorkerBeat } from '../stack/worker';

export const WORKER_BEAT_EVERY_MS = 2_000;

/** `worker`: undefined while the SDK worker is still being created (bundling the workflow code takes a while). */
export function beat(loaded: LoadedConfig, worker: Pick<Worker, 'getStatus'> | undefined, loopLagMs: number): WorkerBeat {
  const s = worker?.getStatus();
  const b: WorkerBeat = { pid: process.pid, at: Date.now(), loopLagMs, runState: s?.runState ?? 'CREATING', activitiesInFlight: s?.numInFlightActivities ?? 0, activationsInFlight: s?.numInFlightWorkflowActivations ?? 0, waitingFor: enginesWaitedFor() };
  writeFileAtomic(workerAliveFile(loaded), JSON.stringify(b));
  return b;
}

/** Beats until the returned stop() is called; from the process's start, so systemd's watchdog is fed while the worker is created. */
export function startBeating(loaded: LoadedConfig, worker: () => Pick<Worker, 'getStatus'> | undefined, log: Logger): () => void {
  let expected = Date.now() + WORKER_BEAT_EVERY_MS;
  const once = () => {
    const lag = Math.max(0, Date.now() - expected);
    expected = Date.now() + WORKER_BEAT_EVERY_MS;
    try {
      beat(loaded, worker(), lag);
      // systemd-notify needs NotifyAccess=all in the unit: the message comes from a child process.
      if (process.env.NOTIFY_SOCKET) execFile('systemd-notify', ['WATCHDOG=1'], () => undefined);
      const pid = respawnSupervisorIfWanted(loaded);
      if (pid !== undefined) log.warn({ pid }, 'the supervisor was not running though wanted; started it again');
    } catch (e) {
      log.warn({ err: e }, 'the worker could not write its beat');
    }
  };
  removeDeadWorkerBeats(loaded); // the files of workers killed before they could remove their own
  once();
  const timer = setInterval(once, WORKER_BEAT_EVERY_MS);
  // On the way out, not when the beats stop: a worker still closing its trackers is not taken for a hung one.
  process.once('exit', () => rmSync(workerAliveFile(loaded), { force: true }));
  return () => clearInterval(timer);
}
