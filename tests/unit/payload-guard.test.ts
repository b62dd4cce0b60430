// The guard on activity results that can grow: a result above
// temporal.worker.max_result_bytes is a named, non-retryable failure that
// says what grew, never a payload the server rejects and a retry without end.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '../helpers/mock-activity';
import { describe, expect, it } from 'vitest';
import { type ActivityDeps, createDeps } from '../../src/activities';
import { PayloadTooLargeError } from '../../src/core';
import { guardResult } from '../../src/activities/payload';
import { rolloutActivities } from '../../src/activities/rollout';
import { parseConfig } from '../../src/configs';
import { ENV, GENERATE, LOCAL_ENV } from '../../src/workflows/activity-options';

describe('result guard', () => {
  it('passes a result at the limit through unchanged', () => {
    const result = { observation: 'x'.repeat(100), info: {} };
    const limit = Buffer.byteLength(JSON.stringify(result));
    expect(guardResult('envReset', result, limit)).toBe(result);
  });

  it('names the activity, the field that grew and the sizes', () => {
    const result = { state: { row: 1 }, observation: 'é'.repeat(1000), info: { row: 1 } };
    expect(() => guardResult('envReset', result, 1024)).toThrow(PayloadTooLargeError);
    expect(() => guardResult('envReset', result, 1024)).toThrow(
      `envReset: the result is ${Buffer.byteLength(JSON.stringify(result))} bytes (its observation is 2002 bytes), above temporal.worker.max_result_bytes 1024; Temporal rejects payloads above 2 MB`,
    );
  });

  it('in an array of results (a group\'s choices), names the element', () => {
    const choices = [{ action: 'short', tokens: 1 }, { action: 'y'.repeat(3000), tokens: 900 }];
    expect(() => guardResult('generateGroupTurn', choices, 2048)).toThrow(/its \[1\]\.action is 3002 bytes/);
  });

  it('is not retried: every retry policy of the calls it guards lists it', () => {
    for (const options of [ENV, GENERATE, LOCAL_ENV]) expect(options.retry?.nonRetryableErrorTypes).toContain(PayloadTooLargeError.name);
  });

  it('temporal.worker.max_result_bytes sets the limit (1 MiB by default)', () => {
    expect(createDeps(parseConfig({}, 't')).maxResultBytes).toBe(1024 * 1024);
    expect(createDeps(parseConfig({ temporal: { worker: { max_result_bytes: 4096 } } }, 't')).maxResultBytes).toBe(4096);
  });

  it('envReset of a dataset row above the limit fails with PayloadTooLargeError naming the observation', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-guard-'));
    const file = path.join(dir, 'big.jsonl');
    writeFileSync(file, `${JSON.stringify({ prompt: 'p'.repeat(5000), answer: '1' })}\n${JSON.stringify({ prompt: 'small', answer: '1' })}\n`);
    const { envReset } = rolloutActivities({ maxResultBytes: 4096 } as ActivityDeps);
    const input = { envType: 'dataset', envConfig: { path: file } };
    const activity = new MockActivityEnvironment();
    await expect(activity.run(envReset, { ...input, seed: 0 })).rejects.toThrow(/^envReset: the result is \d+ bytes \(its observation is 5002 bytes\)/);
    const served = (await activity.run(envReset, { ...input, seed: 1 })) as Awaited<ReturnType<typeof envReset>>;
    expect(served.observation).toBe('small');
  });
});
