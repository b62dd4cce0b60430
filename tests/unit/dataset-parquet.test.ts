// verl's parquet datasets, written by pyarrow as verl's preprocessing writes them (tests/helpers/write_parquet.py):
// chat-message prompts reach reset as messages, answers come from reward_model.ground_truth, malformed rows are
// reported as `row N`, counted and skipped, and a file that is not parquet is an error naming config.path.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dataset } from '../../src/envs/dataset';
import { EnvConfigError } from '../../src/envs/errors';
import type { EnvClient } from '../../src/gpu-bridge';
import { verlRow, writeParquet } from '../helpers/parquet';

const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-parquet-'));
const SYSTEM = { role: 'system', content: 'Answer with a number.' };
const user = (content: string) => ({ role: 'user', content });
const sent: Record<string, unknown>[] = [];
const env = dataset({ reward: async (req: Record<string, unknown>) => (sent.push(req), { reward: 1, info: {} }) } as unknown as EnvClient);

function parquet(name: string, rows: Record<string, unknown>[]): string {
  const file = path.join(dir, name);
  writeParquet(file, rows);
  return file;
}

/** Every valid row through reset, in order. */
async function serveAll(raw: Record<string, unknown>) {
  const config = env.parseConfig(raw);
  const index = await env.index(config);
  const resets = [];
  for (let seed = 0; seed < index.size; seed++) resets.push(await env.reset(config, seed));
  return { config, index, resets };
}

describe('verl parquet rows', () => {
  it('reads verl\'s columns by default: chat messages to reset, the answer from reward_model.ground_truth, the domain from data_source', async () => {
    const file = parquet('train.parquet', [verlRow(0, [SYSTEM, user('1+1=')], '2'), verlRow(1, [user('2+2=')], '4', 'lighteval/MATH')]);
    const { index, resets, config } = await serveAll({ path: file });
    expect(index).toEqual({ size: 2, malformed: 0, skipped: {}, problems: [] });
    // A conversation goes as it is; the observation is its readable rendering.
    expect(resets[0]).toEqual({ state: { row: 0 }, observation: 'system: Answer with a number.\n\nuser: 1+1=', messages: [SYSTEM, user('1+1=')], info: { row: 0 } });
    // A lone user message is the prompt itself, sent as the observation.
    expect(resets[1]).toEqual({ state: { row: 1 }, observation: '2+2=', info: { row: 1 } });
    sent.length = 0;
    for (const r of resets) await env.step(config, r.state, 'reply');
    expect(sent.map((s) => [s.domain, s.reference, s.prompt])).toEqual([
      ['openai/gsm8k', '2', 'system: Answer with a number.\n\nuser: 1+1='],
      ['lighteval/MATH', '4', '2+2='],
    ]);
  });

  it('the key options name other (nested) columns; an int64 column is read as its digits', async () => {
    const file = parquet('keys.parquet', [verlRow(0, [user('q')], 'unused')]);
    const { resets, config } = await serveAll({ path: file, answer_key: 'extra_info.index', domain_key: 'ability' });
    sent.length = 0;
    await env.step(config, resets[0]!.state, 'reply');
    expect([sent[0]!.reference, sent[0]!.domain]).toEqual(['0', 'math']); // extra_info.index is int64 in the file
  });

  it('malformed rows are reported as row N (from 0), counted by reason and skipped; the rest are served in order', async () => {
    const rows = [
      verlRow(0, [SYSTEM, user('ok 0')], '0'),
      verlRow(1, null, '1'), // no prompt
      verlRow(2, [user('no answer')], null),
      { ...verlRow(3, [user('no reward_model')], '3'), reward_model: null },
      verlRow(4, [], '4'), // an empty conversation
      verlRow(5, [SYSTEM, { role: 'user', content: null }], '5'),
      verlRow(6, [{ role: '', content: 'x' }], '6'),
      verlRow(7, [user('ok 7')], '7'),
      verlRow(0, [user('index 0 again')], '8'), // a repeated extra_info.index
      { ...verlRow(9, [user('calls a tool')], '9'), prompt: [{ role: 'user', content: 'x', tool_calls: 'f()' }] },
      verlRow(10, [user('x'.repeat(300 * 1024))], '10'),
    ];
    const file = parquet('malformed.parquet', rows);
    const { index, resets } = await serveAll({ path: file, id_key: 'extra_info.index' });
    expect(resets.map((r) => r.observation)).toEqual(['system: Answer with a number.\n\nuser: ok 0', 'ok 7']);
    expect(index.size + index.malformed).toBe(rows.length);
    expect(index.skipped).toEqual({ missing_field: 3, bad_messages: 4, duplicate_id: 1, too_large: 1 });
    expect(index.problems).toEqual([
      'row 1: needs string fields "prompt" and "reward_model.ground_truth"',
      'row 2: needs string fields "prompt" and "reward_model.ground_truth"',
      'row 3: needs string fields "prompt" and "reward_model.ground_truth"',
      'row 4: prompt messages (prompt): the list is empty',
      'row 5: prompt messages (prompt): message 1 (user) needs a string content, got nothing',
      'row 6: prompt messages (prompt): message 0 needs a non-empty string role, got ""',
      'row 8: duplicate extra_info.index "0" (first on row 0); the first row is kept',
      'row 9: prompt messages (prompt): message 0 (user) has tool_calls; only role and content are sent to the model',
      expect.stringMatching(/^row 10: \d+ bytes as JSON, above max_row_bytes 262144$/),
    ]);
  });

  it('by default verl rows have no id: files that concatenate sources repeat extra_info.index', async () => {
    const file = parquet('concat.parquet', [verlRow(0, [user('gsm8k 0')], '1'), verlRow(0, [user('math 0')], '2', 'lighteval/MATH')]);
    expect((await env.index(env.parseConfig({ path: file }))).size).toBe(2);
    expect((await env.index(env.parseConfig({ path: file, id_key: 'extra_info.index' }))).skipped).toEqual({ duplicate_id: 1 });
  });

  it('a column of the wrong type skips every row, and the file is an error naming config.path and why', async () => {
    const file = parquet('lists.parquet', [{ ...verlRow(0, [user('q')], null), reward_model: { style: 'rule', ground_truth: ['1', 'one'] } }]);
    const failed = env.index(env.parseConfig({ path: file }));
    await expect(failed).rejects.toThrow(EnvConfigError);
    await expect(failed).rejects.toThrow(`config.path: got ${JSON.stringify(file)}; a file with at least one valid row; all 1 rows were skipped (row 0: needs string fields "prompt" and "reward_model.ground_truth")`);
  });

  it('a file that is not parquet is an error naming config.path; format decides how a file is read', async () => {
    const fake = path.join(dir, 'rows.parquet');
    writeFileSync(fake, '{"prompt": "p", "answer": "a"}\n');
    await expect(env.index(env.parseConfig({ path: fake }))).rejects.toThrow(`config.path: got ${JSON.stringify(fake)}; a parquet file; hyparquet cannot read it: parquet file invalid (footer != PAR1)`);
    // format: jsonl reads it as the JSON lines it is, with rollflow's keys
    expect((await env.index(env.parseConfig({ path: fake, format: 'jsonl' }))).size).toBe(1);
    // and format: parquet reads a parquet file whatever its name
    const named = path.join(dir, 'train.data');
    writeParquet(named, [verlRow(0, [user('q')], '1')]);
    expect((await env.index(env.parseConfig({ path: named, format: 'parquet' }))).size).toBe(1);
    // (read as JSON lines, its bytes are no row at all)
    await expect(env.index(env.parseConfig({ path: named }))).rejects.toThrow(/config\.path: got ".*train\.data"; a file with at least one valid row; all \d+ rows were skipped \(line 1: /);
    await expect(env.index(env.parseConfig({ path: path.join(dir, 'none.parquet') }))).rejects.toThrow('a readable parquet file (it does not exist)');
  });

  it('reads every codec pyarrow writes: none, snappy, zstd (polars\' default), gzip, brotli and lz4', async () => {
    for (const codec of ['none', 'snappy', 'zstd', 'gzip', 'brotli', 'lz4']) {
      const file = path.join(dir, `${codec}.parquet`);
      writeParquet(file, [verlRow(0, [user('1+1=')], '2'), verlRow(1, [user('2+2=')], '4')], codec);
      const { index, resets } = await serveAll({ path: file });
      expect([codec, index.size, resets.map((r) => r.observation)]).toEqual([codec, 2, ['1+1=', '2+2=']]);
    }
  });

  it('names a bad format or preset', () => {
    expect(() => env.parseConfig({ path: '/d', format: 'csv' })).toThrow(/config\.format: got "csv"/);
    expect(() => env.parseConfig({ path: '/d', preset: 'openrlhf' })).toThrow(/config\.preset: got "openrlhf"/);
  });
});
