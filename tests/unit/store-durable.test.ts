// Durable store writes: what a killed writer left is cleaned (only a dead process's temp files, matched by
// their exact name), and a full disk is a retryable DiskFullError naming the path with no temp file left:
// on a real 1 MiB tmpfs (mounted here as root; skipped where it cannot be).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DiskFullError, DirectorySampleStore, NON_RETRYABLE_STORE_ERRORS, appendFileDurable, writeFileDurable } from '../../src/store';

const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid!; // exited and reaped

describe('durable store writes', () => {
  it('the first write into a directory removes the temp files of dead writers, and nothing else', async () => {
    const store = new DirectorySampleStore(mkdtempSync(path.join(tmpdir(), 'rollflow-durable-')));
    const dir = path.join(store.root, 'run-1', 'samples');
    mkdirSync(dir, { recursive: true });
    const stale = `a.json.tmp-${deadPid()}-0123abcd`;
    const kept = [`b.json.tmp-${process.pid}-0123abcd`, `c.json.tmp-${process.ppid}-89abcdef`, 'd.json.tmp-notours', 'e.json'];
    for (const name of [stale, ...kept]) writeFileSync(path.join(dir, name), 'x');
    await store.put('run-1/samples/f.json', { f: 1 });
    expect(readdirSync(dir).sort()).toEqual([...kept, 'f.json'].sort());
  });

  describe('on a full disk', () => {
    const disk = mkdtempSync(path.join(tmpdir(), 'rollflow-full-'));
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', disk]).status === 0;
    afterAll(() => void (mounted && spawnSync('umount', ['-l', disk])));

    it.skipIf(!mounted)('a write is a retryable DiskFullError naming the path, and leaves no temp file', async () => {
      const store = new DirectorySampleStore(disk);
      const big = 'x'.repeat(2 * 1024 * 1024); // twice the disk
      const err = await store.put('run-1/batches/step-000000.jsonl', big).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DiskFullError);
      expect((err as Error).message).toContain(`disk full: cannot write ${store.locate('run-1/batches/step-000000.jsonl')}`);
      expect(NON_RETRYABLE_STORE_ERRORS).not.toContain('DiskFullError'); // the activity retries: the run waits
      expect(readdirSync(path.join(disk, 'run-1', 'batches'))).toEqual([]);
      await expect(writeFileDurable(path.join(disk, 'm.json'), big)).rejects.toThrow(DiskFullError);
      writeFileSync(path.join(disk, 'metrics.jsonl'), '{"step":0}\n');
      await expect(appendFileDurable(path.join(disk, 'metrics.jsonl'), big)).rejects.toThrow(/disk full: cannot write .*metrics.jsonl/);
      expect(readFileSync(path.join(disk, 'metrics.jsonl'), 'utf8')).toBe('{"step":0}\n'); // no half line
      await store.put('run-1/batches/step-000000.jsonl', 'small'); // space for it: the retry succeeds
    });
  });
});
