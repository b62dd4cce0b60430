/**
 * Durable local files, the one home of write-then-rename in TypeScript. A rename makes a finished file appear
 * at once, but only an fsync of the file before it and of its directory after it makes it survive an OS crash
 * (else the new name can point at empty data after a reboot). A full disk is a DiskFullError naming the path,
 * and the temp file is removed, so nothing half-written remains.
 *
 * Temp names are `<file>.tmp-<pid>-<8 hex>`: a worker killed mid-write leaves one behind, and the pid says whose
 * it is; cleanStaleTemps removes those whose process is gone (never a live process's: writes run concurrently).
 */
import { randomBytes } from 'node:crypto';
import { open, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { DiskFullError } from './errors';

const TEMP = /\.tmp-(\d+)-[0-9a-f]{8}$/;

/** A writer's temp file (writeFileDurable's), not an object of the store. */
export const isTempName = (name: string): boolean => TEMP.test(name);
const DISK_FULL_CODES = new Set(['ENOSPC', 'EDQUOT']);

/** A full disk's error as DiskFullError naming `file`; any other error as is. */
export function diskFullOr(e: unknown, file: string): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  return code !== undefined && DISK_FULL_CODES.has(code) ? new DiskFullError(`disk full: cannot write ${file} (${code}); retry once space is freed`, { cause: e }) : e;
}

async function fsyncPath(p: string, flags = 'r'): Promise<void> {
  const handle = await open(p, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes `data` to `file` atomically and durably: temp file, fsync, rename, fsync of the directory. */
export async function writeFileDurable(file: string, data: string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const handle = await open(tmp, 'w');
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw diskFullOr(e, file);
  }
  await fsyncPath(path.dirname(file));
}

/**
 * Appends `text` to `file` and fsyncs it (and its directory: the append may have created it). An append that
 * fails midway (a full disk) is cut back off, so the file never ends in half a line.
 */
export async function appendFileDurable(file: string, text: string): Promise<void> {
  try {
    const handle = await open(file, 'a');
    const size = (await handle.stat()).size;
    try {
      await handle.appendFile(text);
      await handle.sync();
    } catch (e) {
      await handle.truncate(size).catch(() => undefined);
      throw e;
    } finally {
      await handle.close();
    }
    await fsyncPath(path.dirname(file));
  } catch (e) {
    throw diskFullOr(e, file);
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // another user's live process
  }
};

/** Removes the temp files in `dir` (named as above) whose writer's process is gone; returns their names. */
export async function cleanStaleTemps(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const stale = names.filter((n) => {
    const pid = TEMP.exec(n)?.[1];
    return pid !== undefined && Number(pid) !== process.pid && !alive(Number(pid));
  });
  await Promise.all(stale.map((n) => rm(path.join(dir, n), { force: true })));
  return stale;
}
