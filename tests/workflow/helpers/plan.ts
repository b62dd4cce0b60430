// The one place the workflow tests build a RunPlan: a tiny single-turn run on the stub env.
import type { RunPlan } from '../../../src/workflows/run';

/** G samples per group, B per step: two groups a step. */
export const G = 2;
export const B = 2 * G;
/** The stub dataset index's size (it wins over plan.datasetSize, as a file dataset's valid rows do). */
export const DATASET_ROWS = 40;

/** α = 1: (1 + α)·B = 8 samples may be buffered, running or training, i.e. four groups. */
export function testPlan(runId: string, overrides: Partial<RunPlan> = {}): RunPlan {
  return {
    runId,
    runDir: `/runs/${runId}`,
    limits: { samplesPerStep: B, groupSize: G, maxSamplesInSystem: 2 * B, maxStaleness: 1, stalePolicy: 'accept' },
    datasetSize: 1000,
    seed: 11,
    maxSteps: 3,
    partialRollout: false,
    replicate: true,
    rolloutMode: 'env_async',
    envs: [{ tag: 'stub', groupsPerStep: B / G, spec: { type: 'stub', config: {}, maxTurns: 1 }, maxTokens: 8 }],
    sampling: { temperature: 1, top_p: 1 },
    filter: 'std',
    train: {},
    stepsPerRun: 100,
    saveSteps: 0,
    configHash: 'workflow-tests',
    ...overrides,
  };
}
