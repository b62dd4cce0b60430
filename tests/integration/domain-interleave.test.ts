// domain_interleave_probs end to end, on a real dev server with sim engines, started by the CLI: a two-domain
// jsonl file (a: 9 rows, b: 2) and shares {a: 0.75, b: 0.25} of 4 groups a step. The domain and row of every
// trained sample are read back from its prompt tokens in the batch files the trainer read (the sim engine's
// prompt tokens are the prompt's bytes), never from the code under test.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainOrder } from '../../src/workflows/domain-order';
import { batchDir, checkpointDir, parseSampleUid } from '../../src/core';
import type { RunStatus } from '../../src/workflows/run';
import { readJsonl, ROOT } from './helpers/dev-server';
import { upSimStack, type SimStack } from './helpers/sim-stack';

let stack: SimStack;
const G = 4;
const STEPS = 6;
const SHARES = { a: 0.75, b: 0.25 };
const ROWS = { a: 9, b: 2 };
/** The sim engine's chat tokens: one per UTF-8 byte, from this id on (rollflow_engines/roles/inference/sim.py). */
const BYTE_OFFSET = 8;

interface Trained {
  uid: string;
  domain: string;
  row: number;
}

/** Each step's trained samples, in step order, with the domain and row their prompt names ("a-3": domain a, row 3). */
function batches(runId: string): Trained[][] {
  const dir = path.join(stack.server.stateDir, 'run', 'samples', batchDir(runId));
  return readdirSync(dir)
    .sort()
    .map((f) =>
      readJsonl<{ uid: string; prompt_ids: number[] }>(path.join(dir, f)).map(({ uid, prompt_ids }) => {
        const text = Buffer.from(prompt_ids.filter((t) => t >= BYTE_OFFSET && t < BYTE_OFFSET + 256).map((t) => t - BYTE_OFFSET)).toString('utf8');
        const [, domain, row] = /row ([ab])-(\d+)/.exec(text) ?? [];
        expect(domain, `prompt of ${uid}: ${text}`).toBeDefined();
        return { uid, domain: domain!, row: Number(row) };
      }),
    );
}

/** Groups (one per prompt) of each domain in a batch. */
const groupsOf = (batch: Trained[], domain: string) => new Set(batch.filter((x) => x.domain === domain).map((x) => x.uid.replace(/-s\d+$/, ''))).size;

function run(runId: string, ...sets: string[]) {
  const r = stack.rollflow('run', stack.config, '--wait', '--run-id', runId, ...sets.flatMap((s) => ['--set', s]));
  expect(r.status, r.stderr).toBe(0);
  return r;
}

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  stack = await upSimStack(
    'interleave-test',
    `
exp_name: interleave-test
seed: 7
max_steps: ${STEPS}
rollout_batch_size: ${G}
num_return_sequences_in_group: 2
async_generation_ratio: 0
domain_interleave_probs: ${JSON.stringify(SHARES)}
custom_envs:
  ds: { env_type: dataset, max_steps: 1, max_tokens_per_step: 64, env_config: { path: /unset, verifier: exact_match } }`,
    // replies of very different lengths (a long-tailed length per prompt), so with α > 0 groups finish out of dispatch order
    { sim: { length: { dist: 'lognormal', mean: 16, sigma: 1, sigma_prompt: 1 }, c0: 0.01 } },
  );
  // file order interleaves the domains (a0 a1 a2 b0 a3 …); 11 rows, so 24 groups run into a third epoch of positions
  const a = Array.from({ length: ROWS.a }, (_, i) => ({ prompt: `row a-${i}`, answer: '1', domain: 'a' }));
  const lines = [...a.slice(0, 3), { prompt: 'row b-0', answer: '1', domain: 'b' }, ...a.slice(3, 6), { prompt: 'row b-1', answer: '1', domain: 'b' }, ...a.slice(6)];
  writeFileSync(path.join(stack.server.stateDir, 'two-domains.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n'));
});

afterAll(async () => {
  await stack?.down();
});

const file = () => `custom_envs.ds.env_config.path=${path.join(stack.server.stateDir, 'two-domains.jsonl')}`;

describe('domain_interleave_probs', () => {
  it('α = 0: every batch has exactly 3 groups of a and 1 of b, and each domain visits all its rows before any repeats', async () => {
    const r = run('sync', file());
    expect(r.stdout).toContain('dataset: 11 rows (by domain: a 9, b 2)');
    const trained = batches('sync');
    expect(trained).toHaveLength(STEPS);
    for (const batch of trained) {
      expect(batch).toHaveLength(G * 2);
      expect([groupsOf(batch, 'a'), groupsOf(batch, 'b')]).toEqual([3, 1]);
    }
    // each domain's prompts in dispatch order (positions run on across epochs of the 11 rows): passes over all its rows
    const position = (uid: string) => {
      const { epoch, position: p } = parseSampleUid(uid);
      return epoch * 11 + p;
    };
    const groups = [...new Map(trained.flat().map((x) => [x.uid.replace(/-s\d+$/, ''), x])).values()].sort((x, y) => position(x.uid) - position(y.uid));
    for (const [domain, n] of Object.entries(ROWS)) {
      const rows = groups.filter((x) => x.domain === domain).map((x) => x.row);
      expect(rows).toHaveLength(STEPS * G * SHARES[domain as 'a' | 'b']);
      for (let i = 0; i + n <= rows.length; i += n) expect([...rows.slice(i, i + n)].sort((x, y) => x - y), `${domain} pass ${i / n}: ${rows.join(',')}`).toEqual(Array.from({ length: n }, (_, k) => k));
    }
    const final = (await stack.client.workflow.getHandle('sync').result()) as RunStatus;
    expect(final.dataset?.domains).toEqual([{ name: 'a', rows: 9 }, { name: 'b', rows: 2 }]);
  });

  it('the checkpoint records the rows per domain; resuming onto a file with another split at the same size is refused', () => {
    const checkpoint = checkpointDir(path.join(stack.server.stateDir, 'run', 'sync'), STEPS); // the sync run's last
    const manifest = JSON.parse(readFileSync(path.join(checkpoint, 'manifest.json'), 'utf8')) as { dataset_size: number; dataset_domains: unknown };
    expect([manifest.dataset_size, manifest.dataset_domains]).toEqual([11, [{ name: 'a', rows: 9 }, { name: 'b', rows: 2 }]]);
    // 11 rows again, split 8 and 3: the same size, so only the domains tell the positions apart
    const resplit = path.join(stack.server.stateDir, 'resplit.jsonl');
    writeFileSync(resplit, Array.from({ length: 11 }, (_, i) => JSON.stringify({ prompt: `row ${i < 8 ? 'a' : 'b'}-${i}`, answer: '1', domain: i < 8 ? 'a' : 'b' })).join('\n'));
    const r = stack.rollflow('run', stack.config, '--wait', '--run-id', 'resplit', '--resume-from', checkpoint, '--set', `custom_envs.ds.env_config.path=${resplit}`, '--set', `max_steps=${STEPS + 2}`);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("the checkpoint's training order was grouped by domain as a (9 rows), b (2 rows), the dataset's is now grouped by domain as a (8 rows), b (3 rows)");
    expect(existsSync(path.join(stack.server.stateDir, 'run', 'samples', batchDir('resplit')))).toBe(false);
  });

  it('a named domain the file lacks fails the run at its start, naming domain_interleave_probs and the domains it has', () => {
    const r = stack.rollflow('run', stack.config, '--wait', '--run-id', 'missing-domain', '--set', file(), '--set', 'domain_interleave_probs={a: 0.5, qa: 0.5}');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('domain_interleave_probs: got {"a":0.5,"qa":0.5}; domains that');
    expect(r.stderr).toContain('has training rows of; it has a (9 rows), b (2 rows), not qa');
    expect(existsSync(path.join(stack.server.stateDir, 'run', 'missing-domain', 'metrics.jsonl'))).toBe(false);
  });

  it('α = 1: each trained group has the domain its position was dealt; per trained batch the counts are only approximate (measured)', async () => {
    run('async', file(), 'async_generation_ratio=1', `max_steps=${2 * STEPS}`);
    const trained = batches('async');
    const final = (await stack.client.workflow.getHandle('async').result()) as RunStatus;
    const order = new DomainOrder(final.dataset!.domains!, SHARES, G, 7);
    for (const x of trained.flat()) {
      const { epoch, position } = parseSampleUid(x.uid);
      expect(x.domain, x.uid).toBe(order.at(epoch * final.datasetSize + position).domain);
    }
    const counts = trained.map((batch) => groupsOf(batch, 'a'));
    // Batches are assembled from groups as they finish, so a batch may hold other than 3 of a; over the run at most
    // the (1 + α)·G groups dispatched but not trained at its end can move the total away from 0.75 of it.
    console.log(`α = 1, groups of a per trained batch (of ${G}): ${counts.join(' ')}`);
    const total = counts.reduce((n, c) => n + c, 0);
    expect(counts).toHaveLength(2 * STEPS);
    expect(Math.abs(total - 0.75 * 2 * STEPS * G)).toBeLessThanOrEqual(2 * G);
  });
});
