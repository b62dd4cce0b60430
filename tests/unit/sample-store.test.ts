import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DirectorySampleStore, InvalidKeyError, SampleNotFoundError } from '../../src/store';

const newStore = () => new DirectorySampleStore(mkdtempSync(path.join(tmpdir(), 'rollflow-store-')));

describe('DirectorySampleStore', () => {
  it('writes and reads JSON objects by key, nested keys included', async () => {
    const store = newStore();
    const sample = { uid: 'e0-p3/1', prompt_ids: [1, 2], response_ids: [3], old_logprobs: [-0.5] };
    await store.put('run-1/samples/e0-p3/1.json', sample);
    expect(await store.get('run-1/samples/e0-p3/1.json')).toEqual(sample);
    expect(await store.has('run-1/samples/e0-p3/1.json')).toBe(true);
    expect(await store.has('run-1/samples/e0-p3/2.json')).toBe(false);
  });

  it('writes JSON lines that an engine reads from the located path', async () => {
    const store = newStore();
    await store.putLines('run-1/batches/step-0.jsonl', [{ a: 1 }, { a: 2 }]);
    const text = readFileSync(store.locate('run-1/batches/step-0.jsonl'), 'utf8');
    expect(text.trimEnd().split('\n').map((l) => JSON.parse(l))).toEqual([{ a: 1 }, { a: 2 }]);
  });

  it('replaces an object atomically, leaving no temp files', async () => {
    const store = newStore();
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.put('k.json', { i })));
    const { i } = await store.get<{ i: number }>('k.json');
    expect(i).toBeGreaterThanOrEqual(0);
    expect(readdirSync(store.root)).toEqual(['k.json']);
  });

  it('names a missing key and rejects keys that escape the store', async () => {
    const store = newStore();
    await expect(store.get('nope.json')).rejects.toThrow(SampleNotFoundError);
    for (const bad of ['', '/abs', '../up', 'a/../b', 'a//b', 'sp ace', 'a/./b']) {
      expect(() => store.locate(bad), bad).toThrow(InvalidKeyError);
    }
  });
});
