// Resuming from a checkpoint (initialState): consumed positions index the training order, so a dataset whose size
// or domain split changed under the checkpoint is refused, naming both orders.
import { ApplicationFailure } from '@temporalio/common';
import { expect, it } from 'vitest';
import type { CheckpointManifest } from '../../src/activities';
import { initialState, type RunInput } from '../../src/workflows/run-input';
import { RunState, type AdmissionLimits } from '../../src/workflows/run-state';

const limits: AdmissionLimits = { samplesPerStep: 2, groupSize: 2, maxSamplesInSystem: 4, maxStaleness: 1, stalePolicy: 'drop' };
const domains = [{ name: 'math', rows: 4 }, { name: 'qa', rows: 2 }];

/** A checkpoint after one step over 6 prompts, with the training order's domains as given. */
function resumeInput(datasetDomains?: { name: string; rows: number }[]): RunInput {
  const s = new RunState(limits, 6);
  s.onGroupResult({ ...s.dispatch(), startVersion: 0, endVersion: 0, samples: 2, accepted: true, rewardMean: 0.5, tokens: 20, partialSamples: 0, maxSpan: 1, storeKeys: [] });
  s.onStepDone(s.takeBatch()!);
  const { consumed } = s.snapshot();
  const manifest: CheckpointManifest = { run_id: 'r', step: 1, version: 1, consumed, seed: 1, dataset_size: 6, config_hash: 'h', ...(datasetDomains ? { dataset_domains: datasetDomains } : {}) };
  return { plan: { limits }, resumeFrom: manifest } as unknown as RunInput;
}

const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return { type: (e as ApplicationFailure).type, nonRetryable: (e as ApplicationFailure).nonRetryable, message: (e as Error).message };
  }
  return undefined;
};

it('resumes when the domain split is the one the checkpoint recorded, or neither was grouped', () => {
  expect(initialState(resumeInput(domains), 6, [...domains]).step).toBe(1);
  expect(initialState(resumeInput(), 6, undefined).step).toBe(1);
});

it('refuses another split at the same size, naming both', () => {
  expect(refusal(() => initialState(resumeInput(domains), 6, [{ name: 'math', rows: 3 }, { name: 'qa', rows: 3 }]))).toEqual({
    type: 'DatasetChangedError',
    nonRetryable: true,
    message: "the checkpoint's training order was grouped by domain as math (4 rows), qa (2 rows), the dataset's is now grouped by domain as math (3 rows), qa (3 rows): its consumed positions would skip the wrong prompts",
  });
});

it('refuses turning domain grouping on or off under a checkpoint', () => {
  expect(refusal(() => initialState(resumeInput(), 6, domains))?.message).toMatch(/^the checkpoint's training order was the file order \(no domain_interleave_probs\), the dataset's is now grouped by domain as math \(4 rows\)/);
  expect(refusal(() => initialState(resumeInput(domains), 6, undefined))?.message).toMatch(/the dataset's is now the file order/);
});

it('refuses another dataset size first', () => {
  expect(refusal(() => initialState(resumeInput(domains), 7, domains))?.message).toBe('the checkpoint was taken over 6 prompts, the dataset now has 7: its consumed positions would skip the wrong prompts');
});
