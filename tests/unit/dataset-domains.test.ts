// The dataset env under domain_interleave_probs: training rows grouped by domain (names sorted, then file
// order), each domain's row count in the index, a named domain the rows lack refused at the run's start.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dataset } from '../../src/envs/dataset';
import { groupByDomain } from '../../src/envs/dataset-domains';
import { describeIndex } from '../../src/envs/dataset-rows';
import type { EnvClient } from '../../src/gpu-bridge';
import { DomainOrder } from '../../src/workflows/domain-order';
import { VAL_SEED_BASE } from '../../src/core';

const row = (prompt: string, domain: string) => ({ prompt, answer: '1', domain });

describe('groupByDomain', () => {
  it('orders training rows by domain name, then file order, and counts each domain', () => {
    const rows = [row('q0', 'qa'), row('q1', 'math'), row('q2', 'qa'), row('q3', 'code'), row('q4', 'math')];
    expect(groupByDomain(rows, [0, 1, 2, 3, 4])).toEqual({
      train: [3, 1, 4, 0, 2],
      domains: [
        { name: 'code', rows: 1 },
        { name: 'math', rows: 2 },
        { name: 'qa', rows: 2 },
      ],
    });
    // only the training rows (a holdout's rows are not among them)
    expect(groupByDomain(rows, [0, 2, 4])).toEqual({ train: [4, 0, 2], domains: [{ name: 'math', rows: 1 }, { name: 'qa', rows: 2 }] });
  });
});

describe('dataset env with domain_interleave_probs', () => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'rollflow-domains-')), 'rows.jsonl');
  // 12 rows: every third one "b", the others "a" (file order interleaves them)
  writeFileSync(file, Array.from({ length: 12 }, (_, i) => JSON.stringify({ id: `r${i}`, prompt: `${i % 3 === 2 ? 'b' : 'a'}-${i}`, answer: `${i}`, domain: i % 3 === 2 ? 'b' : 'a' })).join('\n'));
  const env = dataset({} as EnvClient);
  const prompt = async (config: ReturnType<typeof env.parseConfig>, seed: number) => (await env.reset(config, seed)).observation;

  it('serves training seed s from the s-th row of the rows grouped by domain; the index reports each domain\'s rows', async () => {
    const c = env.parseConfig({ path: file, domain_interleave_probs: { a: 0.75, b: 0.25 } });
    const index = await env.index(c);
    expect(index.domains).toEqual([{ name: 'a', rows: 8 }, { name: 'b', rows: 4 }]);
    expect(describeIndex(index)).toBe('12 rows (by domain: a 8, b 4)');
    const served = await Promise.all(Array.from({ length: 12 }, (_, s) => prompt(c, s)));
    expect(served).toEqual(['a-0', 'a-1', 'a-3', 'a-4', 'a-6', 'a-7', 'a-9', 'a-10', 'b-2', 'b-5', 'b-8', 'b-11']);
    // without the key: file order, and no domains in the index
    const plain = env.parseConfig({ path: file });
    expect(await prompt(plain, 2)).toBe('b-2');
    expect((await env.index(plain)).domains).toBeUndefined();
  });

  it('with DomainOrder on its index, every position serves a row of the domain it was dealt', async () => {
    const shares = { a: 0.75, b: 0.25 };
    const c = env.parseConfig({ path: file, domain_interleave_probs: shares });
    const order = new DomainOrder((await env.index(c)).domains!, shares, 4, 3);
    for (let p = 0; p < 40; p++) {
      const { domain, seed } = order.at(p);
      expect((await prompt(c, seed)).startsWith(`${domain}-`)).toBe(true);
    }
  });

  it('with a holdout, groups the training rows only; validation seeds still serve the held-out rows', async () => {
    const c = env.parseConfig({ path: file, holdout: 3, domain_interleave_probs: { a: 0.5, b: 0.5 } });
    const index = await env.index(c);
    expect(index.size).toBe(9);
    expect(index.domains!.reduce((n, d) => n + d.rows, 0)).toBe(9);
    const train = new Set(await Promise.all(Array.from({ length: 9 }, (_, s) => prompt(c, s))));
    const validation = new Set(await Promise.all(Array.from({ length: 3 }, (_, i) => prompt(c, VAL_SEED_BASE + i))));
    expect([train.size, validation.size]).toEqual([9, 3]);
    expect([...train].filter((p) => validation.has(p))).toEqual([]);
  });

  it('a named domain the training rows lack fails the index, naming domain_interleave_probs and the domains the file has', async () => {
    const c = env.parseConfig({ path: file, domain_interleave_probs: { a: 0.5, qa: 0.5 } });
    await expect(env.index(c)).rejects.toThrow(`domain_interleave_probs: got {"a":0.5,"qa":0.5}; domains that ${file} has training rows of; it has a (8 rows), b (4 rows), not qa`);
  });
});
