// domain_interleave_probs without Temporal: each block's slots per domain (BlockCounts) and the prompt of
// every run position (DomainOrder), over 500 blocks.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DomainRows } from '../../src/envs/dataset-rows';
import { DomainOrder } from '../../src/workflows/domain-order';
import { BlockCounts, SHARE_UNITS, shareUnits } from '../../src/workflows/domain-slots';

const BLOCKS = 500;

/** Every check on 500 blocks of G slots under these shares: per block ⌊G·p⌋ or ⌈G·p⌉ and G in all; cumulative lag < 1. */
function checkBlocks(shares: number[], G: number): void {
  const units = shareUnits(shares);
  const counts = new BlockCounts(units, G);
  const problems: string[] = [];
  for (let b = 0; b < BLOCKS; b++) {
    const c = counts.counts(b);
    if (c.reduce((x, y) => x + y, 0) !== G) problems.push(`block ${b}: ${c.join('+')} slots`);
    // G·p_d in units: n·Q lies within Q of G·u_d, i.e. n ∈ {⌊G·p⌋, ⌈G·p⌉}
    c.forEach((n, d) => Math.abs(n * SHARE_UNITS - G * units[d]!) < SHARE_UNITS || problems.push(`block ${b}: domain ${d} has ${n}`));
    // after b + 1 blocks, each domain has had (b + 1)·G·p slots to within one (integers: |slots·Q − (b+1)·G·u| < Q)
    counts.before(b + 1).forEach((n, d) => Math.abs(n * SHARE_UNITS - (b + 1) * G * units[d]!) < SHARE_UNITS || problems.push(`after block ${b}: domain ${d} has ${n}`));
  }
  expect(problems.slice(0, 5)).toEqual([]);
}

describe('BlockCounts', () => {
  it('gives {0.75, 0.25} of 4 slots exactly 3 and 1 in every block (no rounding to carry)', () => {
    const counts = new BlockCounts(shareUnits([0.75, 0.25]), 4);
    for (let b = 0; b < BLOCKS; b++) expect(counts.counts(b)).toEqual([3, 1]);
  });

  it('carries what rounds away: {0.1, 0.9} of 8 slots gives the first domain 1 slot in 4 of every 5 blocks (ROLL would give it none)', () => {
    const counts = new BlockCounts(shareUnits([0.1, 0.9]), 8);
    const first = Array.from({ length: BLOCKS }, (_, b) => counts.counts(b)[0]);
    expect(new Set(first)).toEqual(new Set([0, 1]));
    expect(first.reduce((a, b) => a! + b!, 0)).toBe(400); // 500 blocks × 8 × 0.1
    for (let b = 0; b < BLOCKS; b += 5) expect(first.slice(b, b + 5).reduce((a, c) => a! + c!, 0)).toBe(4);
  });

  it.each([
    [[0.6, 0.4], 8],
    [[0.6, 0.4], 5],
    [[0.05, 0.35, 0.6], 7],
    [[0.37, 0.27, 0.36], 10], // fractional parts 0.7, 0.7, 0.6: two extras a block among three heavy domains
    [[1 / 3, 1 / 3, 1 / 3], 4],
    [[0.01, 0.01, 0.98], 3],
    [[0.5, 0, 0.5], 1],
    // found by the random test below against deadline-only priority (plain EDF): it needs PD²'s tie-breaks
    [[13, 178, 723, 637, 88].map((w) => w / 1639), 18],
  ])('shares %j of %i slots: per block the rounded shares, cumulatively within one slot of the share', (shares, G) => {
    checkBlocks(shares, G);
  });

  it('holds for random shares and block sizes', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 6 }).filter((w) => w.some((x) => x > 0)), fc.integer({ min: 1, max: 40 }), (weights, G) => {
        const total = weights.reduce((a, b) => a + b, 0);
        checkBlocks(weights.map((w) => w / total), G);
      }),
      { numRuns: 300 },
    );
  });

  it('long-run shares match the probabilities', () => {
    const shares = [0.55, 0.3, 0.15];
    const counts = new BlockCounts(shareUnits(shares), 6);
    const total = counts.before(BLOCKS);
    total.forEach((n, d) => expect(Math.abs(n / (BLOCKS * 6) - shares[d]!)).toBeLessThan(1 / (BLOCKS * 6)));
  });
});

describe('shareUnits', () => {
  it('apportions a million units exactly, even when the shares sum to 1 only within 1e-6', () => {
    expect(shareUnits([0.6, 0.4])).toEqual([600_000, 400_000]);
    expect(shareUnits([1 / 3, 1 / 3, 1 / 3])).toEqual([333_334, 333_333, 333_333]);
    expect(shareUnits([0.3333333, 0.3333333, 0.3333333]).reduce((a, b) => a + b, 0)).toBe(SHARE_UNITS);
  });
});

describe('DomainOrder', () => {
  const domains: DomainRows[] = [
    { name: 'a', rows: 7 },
    { name: 'b', rows: 3 },
    { name: 'c', rows: 5 },
  ];
  const range = { a: [0, 7], b: [7, 10], c: [10, 15] } as const;
  const G = 4;
  const positions = (order: DomainOrder, n: number) => Array.from({ length: n }, (_, p) => order.at(p));

  it('serves each block the exact domain counts, each seed within its domain\'s rows; a domain it does not name never', () => {
    const order = new DomainOrder(domains, { a: 0.75, b: 0.25 }, G, 11);
    const all = positions(order, BLOCKS * G);
    for (let b = 0; b < BLOCKS; b++) {
      const block = all.slice(b * G, (b + 1) * G);
      expect(block.filter((x) => x.domain === 'a')).toHaveLength(3);
      expect(block.filter((x) => x.domain === 'b')).toHaveLength(1);
    }
    for (const { domain, seed } of all) {
      const [lo, hi] = range[domain as keyof typeof range];
      expect(seed >= lo && seed < hi, `${domain} seed ${seed}`).toBe(true);
    }
  });

  it('visits all of a domain\'s rows before any repeats, a new shuffle each pass', () => {
    const order = new DomainOrder(domains, { a: 0.5, b: 0.2, c: 0.3 }, G, 5);
    const all = positions(order, BLOCKS * G);
    for (const d of domains) {
      const seeds = all.filter((x) => x.domain === d.name).map((x) => x.seed);
      const passes = Math.floor(seeds.length / d.rows);
      expect(passes).toBeGreaterThan(10);
      const [lo] = range[d.name as keyof typeof range];
      const rows = Array.from({ length: d.rows }, (_, i) => lo + i);
      const pass = (i: number) => seeds.slice(i * d.rows, (i + 1) * d.rows);
      for (let i = 0; i < passes; i++) expect([...pass(i)].sort((x, y) => x - y)).toEqual(rows);
      expect(new Set(Array.from({ length: passes }, (_, i) => pass(i).join(','))).size).toBeGreaterThan(1);
    }
  });

  it('shuffles the slots within each block: where a domain sits changes from block to block', () => {
    const order = new DomainOrder(domains, { a: 0.75, b: 0.25 }, G, 11);
    const slotOfB = Array.from({ length: 100 }, (_, b) => positions(order, (b + 1) * G).slice(b * G).findIndex((x) => x.domain === 'b'));
    expect(new Set(slotOfB)).toEqual(new Set([0, 1, 2, 3]));
  });

  it('is a pure function of (run seed, position): the same seed gives the same prompts, in any query order; another seed others', () => {
    const shares = { a: 0.5, b: 0.2, c: 0.3 };
    const forward = positions(new DomainOrder(domains, shares, G, 42), 400);
    const fresh = new DomainOrder(domains, shares, G, 42);
    const backward = Array.from({ length: 400 }, (_, i) => fresh.at(399 - i)).reverse();
    expect(backward).toEqual(forward);
    expect(positions(new DomainOrder(domains, shares, G, 43), 400)).not.toEqual(forward);
  });

  it('refuses a named domain the rows do not have, naming the ones they have', () => {
    expect(() => new DomainOrder(domains, { a: 0.5, z: 0.5 }, G, 1)).toThrow('domain_interleave_probs names z, which the training rows do not have (they have a, b, c)');
    expect(() => new DomainOrder([...domains, { name: 'e', rows: 0 }], { a: 0.5, e: 0.5 }, G, 1)).toThrow('gives a share to e, which has no training rows');
  });
});
