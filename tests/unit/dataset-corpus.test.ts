// A corpus of bad dataset files, read from disk the way a worker reads them:
// each is a clear error naming the path, or rows skipped and counted, and no
// row is lost (every non-blank line is served or counted as skipped).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { dataset } from '../../src/envs/dataset';
import { EnvConfigError } from '../../src/envs/errors';
import type { EnvClient } from '../../src/gpu-bridge';

const env = dataset({} as EnvClient);
let dir: string;
const file = (name: string, content: string | Buffer) => {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
};
const row = (prompt: string, extra: Record<string, unknown> = {}) => JSON.stringify({ prompt, answer: '1', ...extra });

/** Indexes `p` and serves every valid row through reset; checks that served + skipped = the file's non-blank lines. */
async function read(p: string, content: string | Buffer, options: Record<string, unknown> = {}) {
  const config = env.parseConfig({ path: p, ...options });
  const index = await env.index(config);
  const served = [];
  for (let seed = 0; seed < index.size; seed++) served.push((await env.reset(config, seed, new AbortController().signal)).observation);
  const lines = Buffer.from(content).toString('latin1').split('\n').filter((l) => l.trim() !== '').length;
  expect(index.size + index.malformed, 'every non-blank line is served or counted').toBe(lines);
  return { index, served };
}

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rollflow-corpus-'));
});

describe('dataset corpus', () => {
  it('malformed rows: each skipped under its reason, the rest served in file order', async () => {
    const content = [row('a'), '{"prompt": "b"', '"a string"', '{"answer": "1"}', row('e'), ''].join('\n');
    const { index, served } = await read(file('malformed.jsonl', content), content);
    expect(served).toEqual(['a', 'e']);
    expect(index.skipped).toEqual({ not_json: 1, not_object: 1, missing_field: 1 });
  });

  it('non-UTF-8 bytes: the row is reported by line and counted, not served with replacement characters', async () => {
    const content = Buffer.concat([Buffer.from(`${row('a')}\n{"prompt": "`), Buffer.from([0xff, 0xfe]), Buffer.from(`", "answer": "1"}\n${row('ü')}\n`)]);
    const { index, served } = await read(file('latin.jsonl', content), content);
    expect(served).toEqual(['a', 'ü']);
    expect(index.problems).toEqual(['line 2: not valid UTF-8']);
  });

  it('a 10 MB line: reported with its size and skipped; the rows around it are served', async () => {
    const huge = row('x'.repeat(10 * 1024 * 1024));
    const content = [row('before'), huge, row('after')].join('\n');
    const { index, served } = await read(file('huge.jsonl', content), content);
    expect(served).toEqual(['before', 'after']);
    expect(index.problems).toEqual([`line 2: ${huge.length} bytes, above max_row_bytes ${256 * 1024}`]);
  });

  it('duplicate ids: the later rows are reported and skipped', async () => {
    const content = [row('a', { id: 'q1' }), row('b', { id: 'q2' }), row('a again', { id: 'q1' }), row('a thrice', { id: 'q1' })].join('\n');
    const { index, served } = await read(file('dupes.jsonl', content), content);
    expect(served).toEqual(['a', 'b']);
    expect(index.skipped).toEqual({ duplicate_id: 2 });
    expect(index.problems[1]).toBe('line 4: duplicate id "q1" (first on line 1); the first row is kept');
  });

  it('an empty file, a file with blank lines only, and a file of bad rows are errors naming the path', async () => {
    for (const [name, content, why] of [
      ['empty.jsonl', '', 'it is empty'],
      ['blank.jsonl', '\n  \n', 'it is empty'],
      ['bad.jsonl', 'x\ny\n', 'all 2 rows were skipped (line 1: not JSON'],
    ] as const) {
      const p = file(name, content);
      const failed = env.index(env.parseConfig({ path: p }));
      await expect(failed).rejects.toThrow(EnvConfigError);
      await expect(failed).rejects.toThrow(`config.path: got ${JSON.stringify(p)}; a file with at least one`);
      await expect(failed).rejects.toThrow(why);
    }
  });

  it('a file that does not exist and a directory are errors naming the path, never a stack trace of fs', async () => {
    const missing = path.join(dir, 'nope.jsonl');
    await expect(env.index(env.parseConfig({ path: missing }))).rejects.toThrow(`dataset:\n  config.path: got ${JSON.stringify(missing)}; a readable JSON-lines file (it does not exist)`);
    const folder = path.join(dir, 'a-directory.jsonl');
    mkdirSync(folder);
    await expect(env.index(env.parseConfig({ path: folder }))).rejects.toThrow(`config.path: got ${JSON.stringify(folder)}; a JSON-lines file, not a directory`);
    await expect(env.reset(env.parseConfig({ path: folder }), 0, new AbortController().signal)).rejects.toThrow(EnvConfigError);
  });
});
