// The dataset env's file parsing: valid rows in file order, malformed rows
// reported by line and counted, never fatal.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dataset } from '../../src/envs/dataset';
import { RewardUnscoredError } from '../../src/envs/errors';
import { describeIndex, parseRows } from '../../src/envs/dataset-rows';
import { EngineRejectedError, type EnvClient } from '../../src/gpu-bridge';
import { VAL_SEED_BASE } from '../../src/core';

const config = dataset({} as EnvClient).parseConfig({ path: '/data.jsonl' });
const parse = (text: string | Buffer, keys = config) => parseRows(typeof text === 'string' ? Buffer.from(text) : text, keys);

describe('dataset rows', () => {
  it('keeps valid rows in order, with the default domain where a row has none', () => {
    const { rows, index } = parse('{"prompt": "a", "answer": "1"}\n\n{"prompt": "b", "answer": 2, "domain": "code"}\n');
    expect(rows).toEqual([
      { prompt: 'a', answer: '1', domain: 'math' },
      { prompt: 'b', answer: '2', domain: 'code' },
    ]);
    expect(index).toEqual({ size: 2, malformed: 0, skipped: {}, problems: [] });
  });

  it('reports and counts malformed rows by line and reason, and skips them', () => {
    const text = ['{"prompt": "a", "answer": "1"}', '{oops', '[1, 2]', '{"prompt": "c"}', '{"prompt": {"x": 1}, "answer": "1"}'].join('\n');
    const { rows, index } = parse(text);
    expect(rows.map((r) => r.prompt)).toEqual(['a']);
    expect(index.size).toBe(1);
    expect(index.malformed).toBe(4);
    expect(index.skipped).toEqual({ not_json: 1, not_object: 1, missing_field: 2 });
    expect(index.problems.map((p) => p.split(':')[0])).toEqual(['line 2', 'line 3', 'line 4', 'line 5']);
    expect(index.problems[2]).toBe('line 4: needs string fields "prompt" and "answer"');
  });

  it('reports the first ten problems and counts every one', () => {
    const { index } = parse(Array.from({ length: 25 }, (_, i) => (i % 2 ? '{"prompt": "p", "answer": "a"}' : 'x')).join('\n'));
    expect([index.size, index.malformed, index.skipped.not_json, index.problems.length]).toEqual([12, 13, 13, 10]);
    expect(index.problems[9]).toMatch(/^line 19: not JSON/);
  });

  it('a row with bytes that are not UTF-8 is reported by line and skipped, never served with replacement characters', () => {
    const bytes = Buffer.concat([Buffer.from('{"prompt": "ok", "answer": "1"}\n{"prompt": "caf'), Buffer.from([0xe9]), Buffer.from('", "answer": "2"}\n{"prompt": "naïve", "answer": "3"}\n')]);
    const { rows, index } = parse(bytes);
    expect(rows.map((r) => r.prompt)).toEqual(['ok', 'naïve']);
    expect([index.malformed, index.skipped]).toEqual([1, { not_utf8: 1 }]);
    expect(index.problems).toEqual(['line 2: not valid UTF-8']);
  });

  it('a line above max_row_bytes is reported with its size and skipped, without being parsed', () => {
    const big = `{"prompt": "${'x'.repeat(300 * 1024)}", "answer": "1"}`;
    const { rows, index } = parse(['{"prompt": "a", "answer": "1"}', big, 'not json either, and long'.repeat(20_000)].join('\n'));
    expect(rows.map((r) => r.prompt)).toEqual(['a']);
    expect(index.skipped).toEqual({ too_large: 2 });
    expect(index.problems[0]).toBe(`line 2: ${Buffer.byteLength(big)} bytes, above max_row_bytes ${256 * 1024}`);
    // max_row_bytes is the key that decides it
    const roomy = dataset({} as EnvClient).parseConfig({ path: '/d', max_row_bytes: 1024 * 1024 });
    expect(parse(big, roomy).index).toMatchObject({ size: 1, malformed: 0 });
  });

  it('a repeated id is reported with the line that had it first; the first row is kept', () => {
    const text = ['{"id": 7, "prompt": "a", "answer": "1"}', '{"id": "8", "prompt": "b", "answer": "2"}', '{"id": "7", "prompt": "c", "answer": "3"}', '{"prompt": "no id", "answer": "4"}', '{"prompt": "no id", "answer": "4"}'].join('\n');
    const { rows, index } = parse(text);
    expect(rows.map((r) => r.prompt)).toEqual(['a', 'b', 'no id', 'no id']); // rows without an id are not compared
    expect(index.problems).toEqual(['line 3: duplicate id "7" (first on line 1); the first row is kept']);
    // id_key names the field
    const keyed = dataset({} as EnvClient).parseConfig({ path: '/d', id_key: 'uid' });
    expect(parse(text, keyed).index.malformed).toBe(0);
    expect(parse('{"uid": 1, "prompt": "a", "answer": "1"}\n{"uid": 1, "prompt": "b", "answer": "1"}', keyed).index.skipped).toEqual({ duplicate_id: 1 });
  });

  it('reads the configured keys', () => {
    const custom = dataset({} as EnvClient).parseConfig({ path: '/d', prompt_key: 'question', answer_key: 'solution' });
    expect(parse('{"question": "q", "solution": "s"}', custom).rows).toEqual([{ prompt: 'q', answer: 's', domain: 'math' }]);
  });

  it('a preset names the keys for JSON lines too (verl rows written as JSON), dotted keys reach nested fields', () => {
    const verl = dataset({} as EnvClient).parseConfig({ path: '/d.jsonl', preset: 'verl' });
    expect([verl.format, verl.prompt_key, verl.answer_key, verl.domain_key, verl.id_key]).toEqual(['jsonl', 'prompt', 'reward_model.ground_truth', 'data_source', undefined]);
    const line = JSON.stringify({ data_source: 'openai/gsm8k', prompt: [{ role: 'system', content: 's' }, { role: 'user', content: 'q' }], reward_model: { ground_truth: 3 } });
    expect(parse(line, verl).rows).toEqual([{ prompt: 'system: s\n\nuser: q', messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'q' }], answer: '3', domain: 'openai/gsm8k' }]);
    // A field whose own name has a dot wins over the path.
    const dotted = dataset({} as EnvClient).parseConfig({ path: '/d', answer_key: 'a.b' });
    expect(parse('{"prompt": "p", "a.b": "flat", "a": {"b": "nested"}}', dotted).rows[0]!.answer).toBe('flat');
    expect(parse('{"prompt": "p", "a": {"b": "nested"}}', dotted).rows[0]!.answer).toBe('nested');
    // Without a preset, the format decides: parquet reads verl's names, JSON lines rollflow's.
    expect(dataset({} as EnvClient).parseConfig({ path: '/train.PARQUET' })).toMatchObject({ format: 'parquet', answer_key: 'reward_model.ground_truth' });
    expect(dataset({} as EnvClient).parseConfig({ path: '/train.parquet', preset: 'rollflow' })).toMatchObject({ format: 'parquet', answer_key: 'answer', id_key: 'id' });
  });

  it('names a bad config key or value', () => {
    expect(() => dataset({} as EnvClient).parseConfig({ path: '/d', promt_key: 'x' })).toThrow(/promt_key/);
    expect(() => dataset({} as EnvClient).parseConfig({ path: '/d', max_row_bytes: 0 })).toThrow(/config\.max_row_bytes: got 0/);
  });

  it('describes an index in one line: counts by reason, then the first problems', () => {
    const { index } = parse('{"prompt": "a", "answer": "1"}\n{oops\n{oops');
    expect(describeIndex(index)).toMatch(/^1 rows, 2 malformed rows skipped \(2 not_json; line 2: not JSON .*; line 3: not JSON .*\)$/);
    expect(describeIndex({ size: 4, malformed: 0, skipped: {}, problems: [] })).toBe('4 rows');
  });
});

describe('dataset scoring', () => {
  it('sends verifier and verifier_config with every reply; without them, neither', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'rollflow-dataset-')), 'rows.jsonl');
    writeFileSync(file, '{"prompt": "p", "answer": "{}", "domain": "code"}\n');
    const sent: unknown[] = [];
    const client = { reward: async (req: unknown) => (sent.push(req), { reward: 0.5, info: {} }) } as unknown as EnvClient;
    const env = dataset(client);
    for (const raw of [{ path: file, verifier: 'code_exec', verifier_config: { mode: 'fraction' } }, { path: file }]) {
      const c = env.parseConfig(raw);
      const { state } = await env.reset(c, 0);
      await env.step(c, state, 'reply');
    }
    expect(sent).toEqual([
      { domain: 'code', prompt: 'p', response: 'reply', reference: '{}', verifier: 'code_exec', config: { mode: 'fraction' } },
      { domain: 'code', prompt: 'p', response: 'reply', reference: '{}' },
    ]);
  });

  it('domain_rewards (the run config\'s rewards) send each row to its domain\'s verifier; a domain without one fails at the index', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'rollflow-dataset-')), 'rows.jsonl');
    writeFileSync(file, ['{"prompt": "1+1", "answer": "2", "domain": "math"}', '{"prompt": "f", "answer": "{}", "domain": "code"}', '{"prompt": "hi", "answer": "a", "domain": "chat"}'].join('\n'));
    const sent: unknown[] = [];
    const env = dataset({ reward: async (req: unknown) => (sent.push(req), { reward: 1, info: {} }) } as unknown as EnvClient);
    const routes = { math: { verifier: 'math_verify' }, code: { verifier: 'code_exec', config: { mode: 'fraction' } } };
    const routed = env.parseConfig({ path: file, domain_rewards: routes });
    await expect(env.index(routed)).rejects.toThrow(/rewards: got \["chat"\]; a reward whose tag_included names every domain of .*rows\.jsonl; these have none \(routed now: math, code\)/);
    for (const seed of [0, 1]) {
      const { state } = await env.reset(routed, seed);
      await env.step(routed, state, 'reply');
    }
    expect(sent).toEqual([
      { domain: 'math', prompt: '1+1', response: 'reply', reference: '2', verifier: 'math_verify' },
      { domain: 'code', prompt: 'f', response: 'reply', reference: '{}', verifier: 'code_exec', config: { mode: 'fraction' } },
    ]);
    // A row that still reaches a step without a route is unscored (never the model's 0).
    const { state } = await env.reset(routed, 2);
    await expect(env.step(routed, state, 'reply')).rejects.toBeInstanceOf(RewardUnscoredError);
    expect((await env.index(env.parseConfig({ path: file, domain_rewards: { ...routes, chat: { verifier: 'exact_match' } } }))).size).toBe(3);
  });

  it('a 422 reward_unscored is RewardUnscoredError (no reward at all); any other refusal stays as it was', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'rollflow-dataset-')), 'rows.jsonl');
    writeFileSync(file, '{"prompt": "p", "answer": "a", "domain": "chat"}\n');
    const refusing = (e: Error) => dataset({ reward: async () => Promise.reject(e) } as unknown as EnvClient);
    for (const [error, expected] of [
      [new EngineRejectedError('HTTP 422 response: no readable grade', 422, 'reward_unscored'), RewardUnscoredError],
      [new EngineRejectedError('HTTP 400 config.template: unknown placeholder', 400), EngineRejectedError],
    ] as const) {
      const env = refusing(error);
      const c = env.parseConfig({ path: file, verifier: 'llm_judge' });
      const { state } = await env.reset(c, 0);
      await expect(env.step(c, state, 'reply')).rejects.toBeInstanceOf(expected);
    }
  });
});

describe('dataset holdout', () => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'rollflow-dataset-')), 'rows.jsonl');
  writeFileSync(file, Array.from({ length: 20 }, (_, i) => JSON.stringify({ id: `r${i}`, prompt: `q${i}`, answer: `${i}` })).join('\n'));
  const env = dataset({} as EnvClient);
  const served = async (config: ReturnType<typeof env.parseConfig>, seeds: number[]) => new Set(await Promise.all(seeds.map(async (s) => (await env.reset(config, s)).observation)));
  const trainSeeds = Array.from({ length: 500 }, (_, i) => i);
  const valSeeds = Array.from({ length: 500 }, (_, i) => VAL_SEED_BASE + i);

  it('training and validation seeds serve disjoint rows, which together are the file; the run trains on the rest', async () => {
    for (const holdout of [5, 0.25]) {
      const c = env.parseConfig({ path: file, holdout });
      const train = await served(c, trainSeeds);
      const validation = await served(c, valSeeds);
      expect([train.size, validation.size]).toEqual([15, 5]);
      expect([...train].filter((p) => validation.has(p))).toEqual([]);
      expect(new Set([...train, ...validation]).size).toBe(20);
      expect((await env.index(c)).size).toBe(15);
      expect(describeIndex(await env.index(c))).toBe('15 rows (and 5 held out for validation)');
    }
    // The same file always splits the same way.
    expect(await served(env.parseConfig({ path: file, holdout: 5 }), valSeeds)).toEqual(await served(env.parseConfig({ path: file, holdout: 0.25 }), valSeeds));
  });

  it('without a holdout every row serves both (a dataset env only validation uses), and a split needs two rows', async () => {
    const c = env.parseConfig({ path: file });
    expect((await served(c, valSeeds)).size).toBe(20);
    const one = path.join(path.dirname(file), 'one.jsonl');
    writeFileSync(one, '{"prompt": "p", "answer": "a"}\n');
    await expect(env.index(env.parseConfig({ path: one, holdout: 1 }))).rejects.toThrow(/config\.holdout: got 1; a file with at least 2 valid rows to split; it has 1/);
    await expect(env.index(env.parseConfig({ path: file, holdout: 20 }))).rejects.toThrow(/config\.holdout: got 20; fewer rows than the file's 20 valid ones \(at least one must train\)/);
  });
});
