// A run's records in its directory: one JSON line per (run, step), found again by a retry so it adds nothing,
// read back as written. (The bucket's one object per record: tests/integration/s3-run.test.ts.)
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runRecords } from '../../src/activities/run-records';

describe('run records in a directory', () => {
  it('adds a line per record, knows a record of this run and step, and reads them back', async () => {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'rollflow-records-')), 'run-1');
    const records = runRecords(dir);
    expect(await records.read('metrics.jsonl')).toEqual([]);
    const first = { run_id: 'run-1', step: 0, reward: 0.5 };
    expect(await records.has('metrics.jsonl', first)).toBe(false);
    await records.add('metrics.jsonl', { reward: 0.5, step: 0, run_id: 'run-1' } as typeof first); // keys in any order
    expect(await records.has('metrics.jsonl', first)).toBe(true);
    expect(await records.has('metrics.jsonl', { run_id: 'run-1', step: 1 })).toBe(false);
    expect(await records.has('metrics.jsonl', { run_id: 'run-10', step: 0 })).toBe(false); // another run's step 0
    expect(await records.has('validation.jsonl', first)).toBe(false);
    await records.add('metrics.jsonl', { run_id: 'run-1', step: 1, reward: 1 });
    expect(readFileSync(path.join(dir, 'metrics.jsonl'), 'utf8')).toBe('{"run_id":"run-1","step":0,"reward":0.5}\n{"run_id":"run-1","step":1,"reward":1}\n');
    expect((await records.read('metrics.jsonl')).map((r) => r.step)).toEqual([0, 1]);
  });
});
