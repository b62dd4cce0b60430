/**
 * The faults that hit the run's files rather than a process's signals.
 *
 * corrupt: one byte in the middle of the largest file of the newest saved trainer state is flipped (its
 * checksum no longer matches, python-engines roles/trainer/state_files.py), after the trainer was
 * SIGKILLed: a trainer that is dead saves nothing newer, so the state damaged is the one its recovery
 * (src/activities/trainer-recovery.ts) tries first, and must pass over.
 *
 * disk: a tmpfs of `--disk-mb` is mounted over the run directory before the runs start, so the sample
 * store, the batch files, metrics.jsonl and the trainer's saved states all live on a small disk of their
 * own (the rest of the machine is untouched); a fault fills it with a filler file, holds it full, then
 * removes the filler. Mounting needs root; the mount is undone when the harness ends.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, statfsSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../configs';

/** The trainer's checkpoint meta file (api.py CHECKPOINT_META): its `files` list the state's other files. */
const META = 'rollflow_checkpoint.json';
/** The fillers' names, at the root of the mount (dot files: no run id can be named so); one per fault, as they may overlap. */
const filler = (dir: string, index: number) => path.join(dir, `.rollflow-chaos-filler-${index}`);
/** statfs f_type of a tmpfs (linux/magic.h TMPFS_MAGIC). */
const TMPFS_MAGIC = 0x01021994;

/** True if `dir` is on a tmpfs (mountSmallDisk's), so filling it fills nothing else. */
export const onTmpfs = (dir: string): boolean => existsSync(dir) && statfsSync(dir).type === TMPFS_MAGIC;

export interface CorruptedState {
  version: number;
  /** The file damaged, and the offset of the byte flipped. */
  file: string;
  offset: number;
}

/** The newest complete saved state under `stateDir` (v<n> holding the meta file), or undefined. */
export function newestState(stateDir: string): { version: number; dir: string } | undefined {
  if (!existsSync(stateDir)) return undefined;
  const versions = readdirSync(stateDir).flatMap((n) => (/^v\d+$/.test(n) && existsSync(path.join(stateDir, n, META)) ? [Number(n.slice(1))] : []));
  if (versions.length === 0) return undefined;
  const version = Math.max(...versions);
  return { version, dir: path.join(stateDir, `v${version}`) };
}

/** Flips the middle byte of the largest file of the newest state in `stateDir` (the meta file if it lists none); undefined when no state is saved. */
export function corruptNewestState(stateDir: string): CorruptedState | undefined {
  const newest = newestState(stateDir);
  if (!newest) return undefined;
  let listed: string[] = [];
  try {
    listed = Object.keys((JSON.parse(readFileSync(path.join(newest.dir, META), 'utf8')) as { files?: Record<string, unknown> }).files ?? {});
  } catch {
    // an unreadable meta file: the state is damaged already; damage the meta file itself below
  }
  const sized = listed.map((f) => path.join(newest.dir, f)).filter((f) => existsSync(f) && statSync(f).size > 0);
  const file = sized.sort((a, b) => statSync(b).size - statSync(a).size)[0] ?? path.join(newest.dir, META);
  return { version: newest.version, file, offset: flipMiddleByte(file) };
}

/** Inverts every bit of the byte in the middle of `file`, in place; returns its offset. */
export function flipMiddleByte(file: string): number {
  const offset = Math.floor(statSync(file).size / 2);
  const fd = openSync(file, 'r+');
  try {
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, offset);
    byte[0] = byte[0]! ^ 0xff;
    writeSync(fd, byte, 0, 1, offset);
  } finally {
    closeSync(fd);
  }
  return offset;
}

const run = (cmd: string, args: string[]): void => {
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
};

/** Mounts a tmpfs of `mb` MiB over `dir` (created if missing): refused, naming the flag, unless root. */
export function mountSmallDisk(dir: string, mb: number): void {
  if (process.getuid?.() !== 0) {
    throw new ConfigError('chaos options', [{ path: '--faults', given: 'disk', expected: `a full-disk fault mounts a ${mb} MiB tmpfs over the run directory ${dir}, which needs root (this process runs as uid ${process.getuid?.()}); run as root or leave disk out` }]);
  }
  mkdirSync(dir, { recursive: true });
  try {
    run('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'rollflow-chaos', dir]);
  } catch (e) {
    throw new Error(`rollflow chaos: cannot mount a ${mb} MiB tmpfs over ${dir} for the disk faults: ${String((e as { stderr?: Buffer }).stderr ?? (e as Error).message).trim()}`, { cause: e });
  }
}

/** Undoes mountSmallDisk; a mount still busy (a process holds a file in it) is detached lazily. */
export function unmountSmallDisk(dir: string): void {
  try {
    run('umount', [dir]);
  } catch {
    run('umount', ['-l', dir]);
  }
}

const isFull = (e: unknown) => (e as NodeJS.ErrnoException).code === 'ENOSPC';

/** Fills the filesystem of `dir` with fault `index`'s filler, down to the last page; returns the bytes written. */
export function fillDisk(dir: string, index: number): number {
  const fd = openSync(filler(dir, index), 'w');
  let bytes = 0;
  try {
    for (const chunk of [1 << 20, 1 << 16, 1 << 12]) {
      const zeros = Buffer.alloc(chunk);
      for (;;) {
        try {
          bytes += writeSync(fd, zeros);
        } catch (e) {
          if (isFull(e)) break;
          throw e;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return bytes;
}

/** True if a new file of one page cannot be written in `dir` (what a sample write meets). */
export function diskIsFull(dir: string): boolean {
  const probe = path.join(dir, '.rollflow-chaos-probe');
  try {
    const fd = openSync(probe, 'w');
    try {
      writeSync(fd, Buffer.alloc(4096));
      return false;
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    if (isFull(e)) return true;
    throw e;
  } finally {
    rmSync(probe, { force: true });
  }
}

export function freeDisk(dir: string, index: number): void {
  rmSync(filler(dir, index), { force: true });
}
