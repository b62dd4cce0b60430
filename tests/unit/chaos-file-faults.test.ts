// The chaos faults that hit files (src/chaos/file-faults.ts) and the checks that read what they left: a
// damaged saved trainer state no longer matches its checksums, a full disk refuses a new file, a half-written
// file is found, and a damaged state recovery never passed over fails the run's check.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRun } from '../../src/chaos';
import { corruptNewestState, diskIsFull, fillDisk, freeDisk, mountSmallDisk, newestState, onTmpfs, unmountSmallDisk } from '../../src/chaos/file-faults';
import { corruptionCheck } from '../../src/chaos/invariants';
import { readSkippedStates, readTornFiles } from '../../src/chaos/records';
import { parseConfig } from '../../src/configs';
import { cleanRun, e } from './helpers/chaos-records';

const sha = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');

/** A saved state as the trainer writes it: its files and a meta file listing their checksums. */
function saveState(stateDir: string, version: number, files: Record<string, string>): string {
  const dir = path.join(stateDir, `v${version}`);
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  const listed = Object.fromEntries(Object.keys(files).map((n) => [n, { size: files[n]!.length, sha256: sha(path.join(dir, n)) }]));
  writeFileSync(path.join(dir, 'rollflow_checkpoint.json'), JSON.stringify({ version, files: listed }));
  return dir;
}

describe('corrupt: the newest saved trainer state damaged', () => {
  it('flips a byte in the middle of the largest file of the newest complete state, leaving older states and the meta file alone', () => {
    const stateDir = mkdtempSync(path.join(tmpdir(), 'chaos-corrupt-'));
    expect(corruptNewestState(stateDir)).toBeUndefined(); // nothing saved yet
    const old = saveState(stateDir, 5, { 'weights.bin': 'w'.repeat(100) });
    const newest = saveState(stateDir, 10, { 'small.json': '{"seed": 1}', 'weights.bin': 'abcdefghij'.repeat(10) });
    mkdirSync(path.join(stateDir, 'v15')); // a save cut short: no meta file, not a state
    const before = { old: sha(path.join(old, 'weights.bin')), small: sha(path.join(newest, 'small.json')), meta: sha(path.join(newest, 'rollflow_checkpoint.json')) };
    expect(newestState(stateDir)?.version).toBe(10);

    const damaged = corruptNewestState(stateDir)!;
    expect(damaged).toEqual({ version: 10, file: path.join(newest, 'weights.bin'), offset: 50 });
    const bytes = readFileSync(damaged.file);
    expect(bytes.length).toBe(100); // same size: only the checksum tells
    expect(bytes[50]).toBe('a'.charCodeAt(0) ^ 0xff);
    expect(bytes.toString('latin1', 0, 50)).toBe('abcdefghij'.repeat(5));
    const listed = JSON.parse(readFileSync(path.join(newest, 'rollflow_checkpoint.json'), 'utf8')) as { files: Record<string, { sha256: string }> };
    expect(sha(damaged.file)).not.toBe(listed.files['weights.bin']!.sha256);
    expect({ old: sha(path.join(old, 'weights.bin')), small: sha(path.join(newest, 'small.json')), meta: sha(path.join(newest, 'rollflow_checkpoint.json')) }).toEqual(before);
  });

  it('the check fails when recovery never passed over a damaged state, and holds once recovery.jsonl names it', () => {
    const runDir = mkdtempSync(path.join(tmpdir(), 'chaos-skipped-'));
    const loaded = parseConfig({ run_dir: runDir }, 'test.yaml');
    const stateDir = path.join(runDir, 'r', 'trainer-state');
    mkdirSync(stateDir, { recursive: true });
    expect(readSkippedStates(loaded, 'r')).toEqual([]);
    expect(corruptionCheck([10], { skippedStates: [] }, 150)).toMatchObject({ ok: false, detail: 'never passed over: v10' });
    // recovery.jsonl as src/activities/trainer-recovery.ts writes it; another run's line is not this run's
    writeFileSync(path.join(stateDir, 'recovery.jsonl'), [{ run_id: 'other', version: 10, skipped: 'corrupt', reason: 'x' }, { run_id: 'r', version: 10, skipped: 'corrupt', reason: 'does not match its checksum' }].map((l) => JSON.stringify(l)).join('\n'));
    const skippedStates = readSkippedStates(loaded, 'r');
    expect(skippedStates).toEqual([{ version: 10, reason: 'does not match its checksum' }]);
    expect(corruptionCheck([10], { skippedStates }, 150).ok).toBe(true);
    expect(corruptionCheck([10, 15], { skippedStates }, 150)).toMatchObject({ ok: false, detail: 'never passed over: v15' });
    // The last version, damaged as the run ended: no step followed, so no recovery needed it.
    expect(corruptionCheck([10, 150], { skippedStates }, 150)).toMatchObject({ ok: true, detail: '1 damaged, passed over: v10; v150 damaged after the last step, which no recovery needed' });
  });
});

describe('half-written files', () => {
  it('a JSON file or a JSON-lines line that does not parse is found; temp files and trainer states are not read', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'chaos-torn-'));
    mkdirSync(path.join(root, 'samples'));
    mkdirSync(path.join(root, 'trainer-state', 'v1'), { recursive: true });
    writeFileSync(path.join(root, 'samples', 'a.json'), '{"uid": "a"}');
    writeFileSync(path.join(root, 'metrics.jsonl'), '{"step": 0}\n{"step": 1}\n');
    writeFileSync(path.join(root, 'samples', 'b.json.tmp-123-0123abcd'), '{"ui');
    writeFileSync(path.join(root, 'trainer-state', 'v1', 'sim_state.json'), '{"se\xff');
    expect(readTornFiles([root])).toEqual([]);
    writeFileSync(path.join(root, 'samples', 'c.json'), '{"uid": "c", "resp');
    writeFileSync(path.join(root, 'metrics.jsonl'), '{"step": 0}\n{"step": 1, "wa');
    expect(readTornFiles([root]).sort()).toEqual([path.join(root, 'metrics.jsonl'), path.join(root, 'samples', 'c.json')]);
    const r = cleanRun();
    r.tornFiles = [path.join(root, 'samples', 'c.json')];
    expect(checkRun(r, e).checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`)).toEqual([`files: none half-written (the run's JSON and JSON-lines files parse): do not parse: ${r.tornFiles[0]}`]);
  });
});

const root = process.getuid?.() === 0;

describe('disk: a small tmpfs over the run directory, filled and freed', () => {
  it.skipIf(!root)('mounts, fills to the last page (a new file meets ENOSPC), frees, and unmounts (root only)', () => {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'chaos-disk-')), 'run');
    const mounted = () => execFileSync('findmnt', ['-n', '-o', 'SIZE', '--mountpoint', dir], { encoding: 'utf8' }).trim();
    mountSmallDisk(dir, 16);
    try {
      expect(onTmpfs(dir)).toBe(true);
      expect(mounted()).toBe('16M');
      writeFileSync(path.join(dir, 'metrics.jsonl'), '{"step": 0}\n');
      expect(diskIsFull(dir)).toBe(false);
      const bytes = fillDisk(dir, 3);
      expect(bytes).toBeGreaterThan(15 * 2 ** 20);
      expect(diskIsFull(dir)).toBe(true);
      expect(() => writeFileSync(path.join(dir, 'sample.json'), 'x'.repeat(8192))).toThrow(/ENOSPC/);
      freeDisk(dir, 3);
      expect(diskIsFull(dir)).toBe(false);
      expect(readFileSync(path.join(dir, 'metrics.jsonl'), 'utf8')).toBe('{"step": 0}\n');
    } finally {
      unmountSmallDisk(dir);
    }
    expect(mounted).toThrow(); // findmnt finds no mount there
  });
});
