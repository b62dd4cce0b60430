// File datasets and run data end to end, on a real dev server with sim
// engines, started by the CLI: a verl parquet file with chat-message prompts
// trains (the sim server tokenized the system message; rewards follow
// reward_model.ground_truth) and validates on its own test file, never on a
// training row; a 10 MB row is reported and skipped and the
// run completes (it used to be retried without end at step 0); a row that
// passes the index but whose observation is above the payload guard fails its
// groups with PayloadTooLargeError and the run stops saying so; a missing
// file fails the run at its start; each run keeps its own directory and a
// run id that already has data is refused. Checks read what the runs
// recorded, never elapsed time.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDataDir } from '../../src/core';
import type { RunStatus } from '../../src/workflows/run';
import { readJsonl, ROOT } from './helpers/dev-server';
import { upSimStack, type SimStack } from './helpers/sim-stack';
import { verlRow, writeParquet } from '../helpers/parquet';

let stack: SimStack;

const row = (prompt: string, answer: string) => JSON.stringify({ prompt, answer });
const stateFile = (name: string) => path.join(stack.server.stateDir, name);
const runFiles = (runId: string) => runDataDir(stateFile('run'), runId);

/** `rollflow run --wait` on a dataset file, one group of 2 per step, synchronous. */
function runOn(runId: string, file: string, ...sets: string[]) {
  return stack.rollflow('run', stack.config, '--wait', '--run-id', runId, '--set', `custom_envs.ds.env_config.path=${file}`, ...sets.flatMap((s) => ['--set', s]));
}

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  stack = await upSimStack(
    'dataset-test',
    `
exp_name: dataset-test
max_steps: 2
rollout_batch_size: 1
num_return_sequences_in_group: 2
async_generation_ratio: 0
custom_envs:
  ds: { env_type: dataset, max_steps: 1, max_tokens_per_step: 8, env_config: { path: /unset, verifier: exact_match } }`,
  );
});

afterAll(async () => {
  await stack?.down();
});

/**
 * The conversation a sim inference server tokenized, read back from a sample's prompt ids (its synthetic chat
 * tokenization, python-engines roles/inference/sim.py: a role marker, one token per UTF-8 byte, an end of turn).
 */
function serverSaw(promptIds: number[]): { role: string; content: string }[] {
  const ROLES: Record<number, string> = { 3: 'system', 4: 'user', 5: 'assistant', 6: 'other' };
  const [END_OF_TURN, BYTE_OFFSET] = [7, 8];
  const turns: { role: string; bytes: number[] }[] = [];
  for (const t of promptIds) {
    if (t === END_OF_TURN) continue;
    if (ROLES[t] !== undefined) turns.push({ role: ROLES[t]!, bytes: [] });
    else turns.at(-1)!.bytes.push(t - BYTE_OFFSET);
  }
  // The prompt ends with the assistant header generation continues from.
  return turns.filter((t) => t.bytes.length > 0 || t.role !== 'assistant').map((t) => ({ role: t.role, content: Buffer.from(t.bytes).toString('utf8') }));
}

describe('dataset runs', () => {
  it('a verl parquet run: the server gets the system message, rewards follow reward_model.ground_truth, validation reads its own test file', async () => {
    const SYSTEM = { role: 'system', content: 'Reply with nothing at all.' };
    // The sim model's replies have no text, so exact_match scores 1 where the ground truth is empty and 0 elsewhere.
    const train = stateFile('train.parquet');
    writeParquet(train, [0, 1, 2, 3, 4].map((i) => (i === 2 ? verlRow(i, null, 'no prompt') : verlRow(i, [SYSTEM, { role: 'user', content: `train ${i}` }], i % 2 ? `${i}` : ''))));
    const test = stateFile('test.parquet');
    writeParquet(test, [0, 1].map((i) => ({ ...verlRow(i, [SYSTEM, { role: 'user', content: `test ${i}` }], i ? 'x' : ''), extra_info: { split: 'test', index: i } })));
    const r = runOn(
      'verl',
      train,
      'max_steps=4',
      'eval_steps=4',
      'train_env_manager={num_env_groups: 1, group_size: 2, tags: [ds]}',
      `custom_envs.val={env_type: dataset, max_steps: 1, max_tokens_per_step: 8, env_config: {path: ${test}, verifier: exact_match}}`,
      'val_env_manager={num_env_groups: 2, group_size: 1, tags: [val]}',
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('dataset: 4 rows, 1 malformed rows skipped (1 missing_field; row 2: needs string fields "prompt" and "reward_model.ground_truth")');

    const store = path.join(stack.server.stateDir, 'run', 'samples', 'verl');
    const samples = readdirSync(path.join(store, 'samples')).map((f) => ({ uid: f.replace(/\.json$/, ''), ...(JSON.parse(readFileSync(path.join(store, 'samples', f), 'utf8')) as { prompt_ids: number[]; reward: number }) }));
    const trained = samples.filter((s) => s.uid.startsWith('e'));
    const validated = samples.filter((s) => s.uid.startsWith('val'));
    // 4 steps of one group of 2: each of the 4 valid rows once (an epoch); validation at steps 0 and 4, 2 rows each.
    expect([trained.length, validated.length]).toEqual([8, 4]);
    for (const s of samples) {
      const conversation = serverSaw(s.prompt_ids);
      expect(conversation[0], s.uid).toEqual(SYSTEM);
      const [split, i] = conversation[1]!.content.split(' ');
      expect([conversation.length, split], s.uid).toEqual([2, s.uid.startsWith('val') ? 'test' : 'train']);
      const groundTruth = split === 'train' ? (Number(i) % 2 ? i : '') : Number(i) ? 'x' : '';
      expect(s.reward, `${s.uid}: ${conversation[1]!.content}`).toBe(groundTruth === '' ? 1 : 0);
    }
    expect(new Set(trained.map((s) => serverSaw(s.prompt_ids)[1]!.content))).toEqual(new Set(['train 0', 'train 1', 'train 3', 'train 4']));
    // The UI's transcript (the trajectory's messages) holds the same conversation rollflow sent.
    const context = JSON.parse(readFileSync(path.join(store, 'trajectories', `${trained[0]!.uid}.json`), 'utf8')) as { messages: { role: string }[] };
    expect(context.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
    const val = readJsonl(path.join(runFiles('verl'), 'validation.jsonl'));
    expect(val.map((v) => [v.step, v['val/samples'], v['val/reward_mean']])).toEqual([
      [0, 2, 0.5],
      [4, 2, 0.5],
    ]);
  });

  it('a 10 MB row is reported and skipped; the run completes on the other rows', async () => {
    const huge = row('9'.repeat(10 * 1024 * 1024), '9');
    const file = stateFile('huge.jsonl');
    writeFileSync(file, [row('1+1=', '2'), huge, row('2+2=', '4'), ''].join('\n'));
    const r = runOn('huge', file);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`dataset: 2 rows, 1 malformed rows skipped (1 too_large; line 2: ${Buffer.byteLength(huge)} bytes, above max_row_bytes ${256 * 1024})`);
    const final = (await stack.client.workflow.getHandle('huge').result()) as RunStatus;
    expect([final.datasetSize, final.step, final.totals.failedGroups]).toEqual([2, 2, 0]);
    expect(readJsonl<{ step: number }>(path.join(runFiles('huge'), 'metrics.jsonl')).map((m) => m.step)).toEqual([0, 1]);
  });

  it('a row the index keeps but whose observation is above max_result_bytes fails its groups with PayloadTooLargeError, and the run stops saying so', async () => {
    const file = stateFile('big-rows.jsonl');
    writeFileSync(file, Array.from({ length: 4 }, (_, i) => row(`${i}`.repeat(1536 * 1024), `${i}`)).join('\n'));
    const r = runOn('too-big', file, 'custom_envs.ds.env_config.max_row_bytes=4194304');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/run too-big failed: .*groups failed \(0 for infrastructure reasons, 4 for others\); last error: .*envReset: the result is \d+ bytes \(its observation is 1572866 bytes\), above temporal\.worker\.max_result_bytes 1048576/);
    const failed = await stack.client.workflow.getHandle('too-big').describe();
    expect(failed.status.name).toBe('FAILED');
  });

  it('a dataset file that does not exist fails the run at its start, naming config.path', () => {
    const missing = stateFile('missing.jsonl');
    const r = runOn('missing', missing);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`config.path: got ${JSON.stringify(missing)}; a readable JSON-lines file (it does not exist)`);
    expect(existsSync(path.join(runFiles('missing'), 'metrics.jsonl'))).toBe(false);
  });

  it('two runs of one config keep their own data; a run id that already has data is refused before it starts', async () => {
    const file = stateFile('small.jsonl');
    writeFileSync(file, [row('1+1=', '2'), row('2+2=', '4')].join('\n'));
    expect(runOn('first', file).status).toBe(0);
    expect(runOn('second', file, 'max_steps=3').status).toBe(0);
    for (const [runId, steps] of [['first', [0, 1]], ['second', [0, 1, 2]]] as const) {
      const records = readJsonl<{ run_id: string; step: number }>(path.join(runFiles(runId), 'metrics.jsonl'));
      expect(records.map((m) => [m.run_id, m.step])).toEqual(steps.map((s) => [runId, s]));
      expect(readdirSync(path.join(runFiles(runId), 'checkpoints'))).toEqual([`step-00000${steps.length}`]);
    }
    const again = runOn('first', file);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain(`--run-id: got "first"; an id with no data yet: ${runFiles('first')} holds an earlier run's data`);
    // refused before starting: the first run's workflow is still the only execution under its id
    const executions = [];
    for await (const e of stack.client.workflow.list({ query: `WorkflowId = 'first'` })) executions.push(e.runId);
    expect(executions).toHaveLength(1);
  });
});
