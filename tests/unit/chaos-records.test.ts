// The readers of src/chaos/records.ts on files in the formats their writers
// use: the trainer's step log (python-engines roles/trainer/step_log.py), the
// env server's action log ({session, index, action_sha256, reward, done, ts}
// per applied env step) and a stored sample's version spans. A torn or
// foreign line is counted, never dropped in silence.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { envActionCheck } from '../../src/chaos/history-invariants';
import { oldestTokenVersion, readEnvActions, readTrainerLog } from '../../src/chaos/records';
import { cleanRun } from './helpers/chaos-records';

const dir = mkdtempSync(path.join(tmpdir(), 'chaos-records-'));
const file = (name: string, lines: unknown[], tail = '') => {
  const f = path.join(dir, name);
  writeFileSync(f, lines.map((l) => `${JSON.stringify(l)}\n`).join('') + tail);
  return f;
};

describe('chaos records', () => {
  it('the trainer step log: this run\'s lines only, steps and events apart, a torn last line counted', () => {
    const f = file('steps.jsonl', [
      { run_id: 'other', event: 'reset', version: 0, lineage: 'X', ts: 1 },
      { run_id: 'r', event: 'reset', version: 0, lineage: 'A', ts: 2 },
      { run_id: 'r', step: 0, version_after: 1, uids_sha256: 'h0', ts: 3, lineage: 'A' },
      { run_id: 'r', event: 'save', version: 1, lineage: 'A', path: '/s/v1', ts: 4 },
      { run_id: 'r', event: 'load', version: 1, lineage: 'B', parent: 'A', path: '/s/v1', ts: 5 },
      { run_id: 'r', step: 0, version_after: 1, uids_sha256: 'h0', ts: 6, lineage: 'B', recovered: true },
    ], '{"run_id": "r", "step": 1, "vers');
    expect(readTrainerLog(f, 'r')).toEqual({
      file: f,
      unreadableLines: 1,
      lines: [
        { kind: 'reset', version: 0, lineage: 'A' },
        { kind: 'step', step: 0, versionAfter: 1, uidsSha256: 'h0', lineage: 'A', recovered: false },
        { kind: 'save', version: 1, lineage: 'A', path: '/s/v1' },
        { kind: 'load', version: 1, lineage: 'B', parent: 'A', path: '/s/v1' },
        { kind: 'step', step: 0, versionAfter: 1, uidsSha256: 'h0', lineage: 'B', recovered: true },
      ],
    });
    expect(readTrainerLog(path.join(dir, 'none.jsonl'), 'r')).toEqual({ file: path.join(dir, 'none.jsonl'), why: `${path.join(dir, 'none.jsonl')} does not exist` });
    expect(readTrainerLog(undefined, 'r')).toMatchObject({ why: expect.stringMatching(/launches no trainer/) });
  });

  it('the env action log: a (session, index) applied twice fails the check; no file, nothing to check', () => {
    const line = (session: string, index: number, action: string) => ({ session, index, action_sha256: action, reward: 0, done: false, ts: 1 });
    const f = file('actions.jsonl', [line('s1', 0, 'a'), line('s1', 1, 'b'), line('s1', 1, 'b'), { session: 's2' }]);
    const r = cleanRun();
    r.envActions = readEnvActions(f);
    expect(r.envActions).toMatchObject({ unreadableLines: 1 });
    expect(envActionCheck(r)).toEqual({ name: 'env: no (session, index) applied twice', ok: false, detail: `s1#1 ×2, 1 unreadable lines in ${f}` });
    expect(readEnvActions(path.join(dir, 'none.jsonl'))).toBeUndefined();
  });

  it('a sample\'s oldest token version: spans must cover every trained token; env tokens need none; per-token versions win', () => {
    const ids = [1, 2, 3, 4];
    expect(oldestTokenVersion({ uid: 'u', response_ids: ids, version_spans: [{ start: 2, end: 4, version: 3 }, { start: 0, end: 2, version: 2 }] })).toBe(2);
    expect(oldestTokenVersion({ uid: 'u', response_ids: ids, version_spans: [{ start: 0, end: 1, version: 2 }, { start: 2, end: 4, version: 3 }] })).toBeUndefined(); // token 1 unknown
    expect(oldestTokenVersion({ uid: 'u', response_ids: ids, loss_mask: [1, 0, 1, 1], version_spans: [{ start: 0, end: 1, version: 2 }, { start: 2, end: 4, version: 3 }] })).toBe(2); // token 1: an env token
    expect(oldestTokenVersion({ uid: 'u', response_ids: ids })).toBeUndefined();
    expect(oldestTokenVersion({ uid: 'u', response_ids: ids, loss_mask: [0, 0, 0, 0] })).toBeNull();
    expect(oldestTokenVersion({ uid: 'u', response_ids: ids, versions: [4, 1, 4, 4], version_spans: [{ start: 0, end: 4, version: 4 }] })).toBe(1);
  });
});
