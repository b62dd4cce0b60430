/**
 * Background processes with pid files: start detached (they outlive the CLI),
 * find out whether a pid file still names our process, stop with SIGTERM then
 * SIGKILL. Every call is idempotent.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ManagedProcess {
  name: string;
  pidFile: string;
  logFile: string;
  /** A substring of the command line that identifies our process, so a reused pid is not mistaken for it. */
  marker: string;
}

/** What a process was started with (arguments, code version); a different one means it must be restarted. */
export function recordedFingerprint(p: ManagedProcess): string | undefined {
  if (!existsSync(p.pidFile)) return undefined;
  return readFileSync(p.pidFile, 'utf8').split('\n')[1] || undefined;
}

/** The pid in the pid file when that process is alive and is ours; otherwise undefined. */
export function livePid(p: ManagedProcess): number | undefined {
  if (!existsSync(p.pidFile)) return undefined;
  const pid = Number(readFileSync(p.pidFile, 'utf8').split('\n')[0]);
  return runs(pid, p.marker) ? pid : undefined;
}

/** Whether `pid` is a live process whose command line holds `marker` (a reused pid is someone else's). */
export function runs(pid: number, marker: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').includes(marker);
  } catch {
    return false;
  }
}

export function startDetached(p: ManagedProcess, command: string, args: string[], env: NodeJS.ProcessEnv = process.env, fingerprint = ''): number {
  mkdirSync(path.dirname(p.pidFile), { recursive: true });
  mkdirSync(path.dirname(p.logFile), { recursive: true });
  const out = openSync(p.logFile, 'a');
  try {
    const child = spawn(command, args, { detached: true, stdio: ['ignore', out, out], env });
    if (child.pid === undefined) throw new Error(`could not start ${p.name}: ${command}`);
    writeFileSync(p.pidFile, `${child.pid}\n${fingerprint}\n`);
    child.unref();
    return child.pid;
  } finally {
    closeSync(out);
  }
}

/** `known`: a pid to stop that the pid file does not name (an orphan; see adoptOrStop). */
export async function stopProcess(p: ManagedProcess, graceMs = 30_000, known?: number): Promise<'stopped' | 'not running'> {
  const pid = known ?? livePid(p);
  rmSync(p.pidFile, { force: true });
  if (pid === undefined) return 'not running';
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) process.kill(pid, 'SIGKILL');
    await sleep(100);
  }
  return 'stopped';
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A live process of ours that holds `p`'s place (its port) but is not in the pid file (its pid file was
 * overwritten, or lost): adopted into the pid file when its command line is `args` exactly, else stopped,
 * so a fresh start does not fail to bind behind it. Returns the pid adopted.
 */
export async function adoptOrStop(p: ManagedProcess, pid: number, args: string[], fingerprint: string): Promise<number | undefined> {
  if (!runs(pid, p.marker)) return undefined;
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  if (cmdline.slice(-args.length).join('\0') === args.join('\0')) {
    writeFileSync(p.pidFile, `${pid}\n${fingerprint}\n`);
    return pid;
  }
  await stopProcess({ ...p, pidFile: `${p.pidFile}.orphan` }, 30_000, pid);
  return undefined;
}

/**
 * Starts `p` unless a live process with the same fingerprint runs already; a
 * live one with another fingerprint (new arguments, rebuilt code) is replaced.
 */
export async function ensureStarted(p: ManagedProcess, fingerprint: string, start: () => number): Promise<{ pid: number; action: 'started' | 'restarted' | 'already running' }> {
  const running = livePid(p);
  if (running !== undefined && recordedFingerprint(p) === fingerprint) return { pid: running, action: 'already running' };
  if (running !== undefined) await stopProcess(p);
  return { pid: start(), action: running === undefined ? 'started' : 'restarted' };
}

/** Polls `probe` until it returns a value or the process dies or the deadline passes. */
export async function waitUntil<T>(p: ManagedProcess, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (livePid(p) === undefined) throw new Error(`${p.name} exited during start; last lines of ${p.logFile}:\n${tail(p.logFile)}`);
    if (Date.now() > deadline) throw new Error(`${p.name} not ready after ${timeoutMs / 1000}s; see ${p.logFile}`);
    await sleep(200);
  }
}

export function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
