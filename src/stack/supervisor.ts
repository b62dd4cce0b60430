/**
 * The supervisor of `rollflow dev up` as other processes see it: its pid
 * file, the status file it keeps, and the "wanted" file that says it should
 * run. `dev up` writes the wanted file and starts it; `dev down` removes the
 * file first, then stops it. The worker restarts a supervisor that died while
 * wanted (src/worker/liveness.ts), and the supervisor restarts the worker, so
 * the one process that restarts the others is not itself left unwatched.
 * The loop itself is src/stack/supervise.ts.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LoadedConfig } from '../configs';
import { cliEntry, logsDir, pidsDir, stateDir } from '../paths';
import { readJsonFile, writeFileAtomic } from './files';
import { ensureStarted, livePid, recordedFingerprint, runs, startDetached, stopProcess, type ManagedProcess } from './processes';

export type PartState = 'starting' | 'running' | 'unhealthy' | 'backoff' | 'crash-loop';

export interface PartStatus {
  state: PartState;
  pid?: number;
  /** Restarts since the supervisor started: after an exit, or after a kill for a hang. */
  restarts: number;
  /** Kills of a live process that stopped answering or progressing. */
  hangKills: number;
  /** Why it was last restarted, or why it is unhealthy now. */
  reason?: string;
  /** ms since the epoch. */
  since: number;
  nextAttemptAt?: number;
  /** The crash loop's evidence: the last lines of its log. */
  logTail?: string;
}

export interface SupervisorStatus {
  pid: number;
  /** Rewritten at least every few seconds; an old one means the supervisor is gone. */
  updatedAt: number;
  parts: Record<string, PartStatus>;
}

const name = ({ config }: LoadedConfig) => `supervisor-${config.temporal.task_queue}`;

export function supervisorProcess(loaded: LoadedConfig, state = stateDir()): ManagedProcess {
  const n = name(loaded);
  return { name: n, pidFile: path.join(pidsDir(state), `${n}.pid`), logFile: path.join(logsDir(state), `${n}.log`), marker: 'cli/index.js supervise' };
}

export const supervisorStatusFile = (loaded: LoadedConfig, state = stateDir()) => path.join(pidsDir(state), `${name(loaded)}.json`);
const wantedFile = (loaded: LoadedConfig, state = stateDir()) => path.join(pidsDir(state), `${name(loaded)}.wanted`);
/** Written by `dev up --no-supervise`, so a later `rollflow run` (which brings the stack up) leaves the supervisor off too. */
const unsupervisedFile = (loaded: LoadedConfig, state = stateDir()) => path.join(pidsDir(state), `${name(loaded)}.off`);

/** Whether `dev up --no-supervise` asked for no supervisor (until the next plain `dev up` or `dev down`). */
export const supervisionTurnedOff = (loaded: LoadedConfig) => existsSync(unsupervisedFile(loaded));

export const readSupervisorStatus = (loaded: LoadedConfig) => readJsonFile<SupervisorStatus>(supervisorStatusFile(loaded));

export function writeSupervisorStatus(loaded: LoadedConfig, status: SupervisorStatus): void {
  writeFileAtomic(supervisorStatusFile(loaded), JSON.stringify(status));
}

/** The config arguments the supervisor was wanted with, or undefined once `dev down` said it should stop. */
export const supervisorWanted = (loaded: LoadedConfig) => readJsonFile<string[]>(wantedFile(loaded));

function spawnSupervisor(loaded: LoadedConfig, configArgs: string[], fingerprint: string): number {
  const proc = supervisorProcess(loaded);
  return startDetached(proc, process.execPath, [cliEntry, 'supervise', ...configArgs], process.env, fingerprint);
}

const fingerprintOf = (configArgs: string[]) => JSON.stringify({ configArgs, built: statSync(cliEntry).mtimeMs });

export async function startSupervisor(loaded: LoadedConfig, configArgs: string[]): Promise<string> {
  rmSync(unsupervisedFile(loaded), { force: true });
  const { pid, action } = await ensureStarted(supervisorProcess(loaded), fingerprintOf(configArgs), () => spawnSupervisor(loaded, configArgs, fingerprintOf(configArgs)));
  // Wanted only once its pid file names it: the worker's beat starts a wanted supervisor that has none.
  writeFileAtomic(wantedFile(loaded), JSON.stringify(configArgs));
  return `${name(loaded)}: ${action} (pid ${pid}); it restarts whatever dies or hangs`;
}

const lockFile = (loaded: LoadedConfig) => path.join(pidsDir(), `${name(loaded)}.lock`);

/**
 * Makes this process the stack's one supervisor: undefined when it is, else the pid of the live one that is
 * (two spawned at once, by `dev up` and a worker's beat: the second must not fight the first over every
 * restart). The lock file names the holder; a holder that is gone leaves a stale one, taken over.
 */
export function claimSupervisor(loaded: LoadedConfig): number | undefined {
  const file = lockFile(loaded);
  mkdirSync(path.dirname(file), { recursive: true });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      return undefined;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = Number(readFileSync(file, 'utf8').split('\n')[0]);
    if (holder !== process.pid && runs(holder, supervisorProcess(loaded).marker)) {
      // The pid file may name this process (its spawner wrote it): point it back at the holder.
      const p = supervisorProcess(loaded);
      writeFileAtomic(p.pidFile, `${holder}\n${recordedFingerprint(p) ?? ''}\n`);
      return holder;
    }
    rmSync(file, { force: true }); // its holder is gone
  }
  throw new Error(`could not take the supervisor lock ${file}`);
}

export function releaseSupervisor(loaded: LoadedConfig): void {
  const file = lockFile(loaded);
  if (existsSync(file) && Number(readFileSync(file, 'utf8').split('\n')[0]) === process.pid) rmSync(file, { force: true });
}

/** Starts the supervisor again if it is wanted and not running (the worker calls this on each beat). */
export function respawnSupervisorIfWanted(loaded: LoadedConfig): number | undefined {
  const configArgs = supervisorWanted(loaded);
  if (!configArgs || livePid(supervisorProcess(loaded)) !== undefined) return undefined;
  return spawnSupervisor(loaded, configArgs, fingerprintOf(configArgs));
}

/** `turnOff`: also keep it off for a later `rollflow run` (`dev up --no-supervise`); `dev down` clears that. */
export async function stopSupervisor(loaded: LoadedConfig, { turnOff = false } = {}): Promise<string> {
  if (turnOff) writeFileAtomic(unsupervisedFile(loaded), 'dev up --no-supervise\n');
  else rmSync(unsupervisedFile(loaded), { force: true });
  return haltSupervisor(loaded);
}

/** Stops the supervisor and its respawn by the worker's beat, leaving `dev up --no-supervise`'s choice as it is. */
export async function haltSupervisor(loaded: LoadedConfig): Promise<string> {
  rmSync(wantedFile(loaded), { force: true });
  const stopped = await stopProcess(supervisorProcess(loaded));
  rmSync(supervisorStatusFile(loaded), { force: true }); // what it said of parts it no longer watches
  return `${name(loaded)}: ${stopped}`;
}

/** The supervisor's own status line, then one for each part it did not find simply running all along. */
export function supervisorLines(loaded: LoadedConfig, now = Date.now()): { ok: boolean; line: string }[] {
  const pid = livePid(supervisorProcess(loaded));
  const wanted = existsSync(wantedFile(loaded));
  if (pid === undefined) return [{ ok: !wanted, line: `${name(loaded)}: ${wanted ? 'not running (the worker restarts it on its next beat)' : 'stopped'}` }];
  const status = readSupervisorStatus(loaded);
  const lines = [{ ok: true, line: `${name(loaded)}: running pid=${pid}${status ? `, status written ${((now - status.updatedAt) / 1000).toFixed(0)} s ago` : ''}` }];
  for (const [part, s] of Object.entries(status?.parts ?? {})) {
    if (s.state === 'running' && s.restarts === 0 && s.hangKills === 0) continue; // said by the part's own line
    const detail = [`restarts=${s.restarts}`, s.hangKills ? `hang-kills=${s.hangKills}` : '', s.reason ? `last: ${s.reason}` : ''].filter(Boolean).join(' ');
    const wait = s.nextAttemptAt ? `, next try in ${Math.max(0, (s.nextAttemptAt - now) / 1000).toFixed(0)} s` : '';
    lines.push({ ok: s.state === 'running', line: `  ${part}: ${s.state}${wait} ${detail}${s.state === 'crash-loop' && s.logTail ? `\n${s.logTail}` : ''}` });
  }
  return lines;
}
