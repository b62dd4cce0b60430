/** What a `run` execution starts from, what its status query returns, and how the one becomes its RunState. */
import { ApplicationFailure, log, proxyActivities } from '@temporalio/workflow';
import type { Activities, CheckpointManifest } from '../activities';
import type { DatasetIndex, DomainRows } from '../envs/dataset-rows';
import { ENV } from './activity-options';
import { DomainOrder } from './domain-order';
import type { RunRow } from './metadata';
import type { RunPlan } from './run-plan';
import { RunState, type RunSnapshot } from './run-state';
import { type RunTotals } from './run-totals';

export interface RunInput {
  plan: RunPlan;
  /** Start from this checkpoint instead of the initial weights. */
  resumeFrom?: CheckpointManifest;
  /** Set by continue-as-new: the state to carry on from. */
  snapshot?: RunSnapshot;
  /** When the run's first execution started (epoch ms): wall_s counts from here across continue-as-new. */
  startedAtMs?: number;
  /** The latest validation: mean reward of the weights after `steps` steps. */
  lastValidation?: { steps: number; rewardMean: number };
  suspended?: boolean;
  /** An operator asked to cancel (cancelRun) while this execution continued-as-new: the next one ends at once. */
  cancelRequested?: boolean;
  /** Whether this run left the inference servers paused (suspend); carried so resume unpauses them after continue-as-new. */
  enginesPaused?: boolean;
  /** The file dataset's index, taken at the first run's start. */
  dataset?: DatasetIndex;
  /** The newest rows of the run's progress table (its current details in the UI), carried across continue-as-new. */
  progress?: RunRow[];
  /** Workflow ids of lockstep batches by group uid (env_async groups are found by their own id). */
  owners?: Record<string, string>;
  /** Legacy: executions continued-as-new before the totals had one home carried these apart (read, never written). */
  stats?: LegacyStats;
}

type LegacyStats = Pick<RunTotals, 'stalenessSum' | 'stalenessMax' | 'partialSamples' | 'maxPartialSpan' | 'lastRewardMean' | 'peakSamplesInSystem'> & {
  /** Trained samples (RunTotals.trainedSamples). */
  samples: number;
  lastValidation?: { steps: number; rewardMean: number };
  startedAtMs?: number;
};

export type RunStatus = ReturnType<RunState['view']> & {
  runId: string;
  maxSteps: number;
  suspended: boolean;
  /** The inference servers are paused for this run's suspension (generations in flight frozen). */
  enginesPaused: boolean;
  lastValidation?: { steps: number; rewardMean: number };
  /** Prompts per epoch. */
  datasetSize: number;
  /** A file dataset's index: valid rows, malformed rows (skipped) and the first problems. */
  dataset?: DatasetIndex;
  /** Set when the run ended on the operator's cancelRun: the steps trained, and the workflows still generating that were cancelled. */
  cancelled?: { atStep: number; groupsInFlight: number };
};

/** The status query's answer: the plan's facts, the state's view, and what the run holds beside its state. */
export function runStatus(plan: RunPlan, state: RunState, held: Pick<RunStatus, 'suspended' | 'enginesPaused' | 'lastValidation' | 'datasetSize' | 'dataset'>): RunStatus {
  const { suspended, enginesPaused, lastValidation, datasetSize, dataset } = held;
  return { runId: plan.runId, maxSteps: plan.maxSteps, ...state.view(), suspended, enginesPaused, ...(lastValidation ? { lastValidation } : {}), datasetSize, ...(dataset ? { dataset } : {}) };
}

/** What a checkpoint records beside the trainer's weights: enough for RunState.resumeFrom to go on in the same order. */
export function checkpointManifest(plan: RunPlan, state: RunState, datasetSize: number, dataset: DatasetIndex | undefined): CheckpointManifest {
  const { consumed } = state.snapshot();
  return { run_id: plan.runId, step: state.step, version: state.version, consumed, seed: plan.seed, dataset_size: datasetSize, ...(dataset?.domains ? { dataset_domains: dataset.domains } : {}), config_hash: plan.configHash };
}

const { datasetIndex } = proxyActivities<Activities>(ENV);

/** The first file-backed env's index (envs that draw episodes from the seed have none). */
export async function indexDataset(plan: RunPlan): Promise<DatasetIndex | undefined> {
  const indexes = await Promise.all(plan.envs.map((e) => datasetIndex({ envType: e.spec.type, envConfig: e.spec.config })));
  const index = indexes.find((i) => i !== null) ?? undefined;
  if (index && index.malformed > 0) log.warn('malformed dataset rows skipped', { malformed: index.malformed, skipped: index.skipped, problems: index.problems });
  return index;
}

/**
 * domain_interleave_probs' order of prompts over the dataset index's domains; none without the key. The env's index
 * already refused named domains the rows lack, so a failure here is an index without domains (a changed worker):
 * it fails the run rather than retry a workflow task that cannot succeed.
 */
export function domainOrder(plan: RunPlan, dataset: DatasetIndex | undefined): DomainOrder | undefined {
  if (!plan.domainInterleave) return undefined;
  try {
    if (!dataset?.domains) throw new Error('domain_interleave_probs needs a dataset env whose index reports its domains; this run\'s index has none');
    return new DomainOrder(dataset.domains, plan.domainInterleave, plan.limits.samplesPerStep / plan.limits.groupSize, plan.seed);
  } catch (e) {
    throw ApplicationFailure.nonRetryable((e as Error).message, 'DomainInterleaveError');
  }
}

/** The run's state: carried on from a snapshot, resumed from a checkpoint, or new. */
export function initialState(input: RunInput, datasetSize: number, domains?: DomainRows[]): RunState {
  const { plan, resumeFrom, snapshot } = input;
  if (snapshot) return RunState.restore(snapshot, legacyTotals(input));
  if (!resumeFrom) return new RunState(plan.limits, datasetSize);
  if (resumeFrom.dataset_size !== datasetSize) {
    throw ApplicationFailure.nonRetryable(`the checkpoint was taken over ${resumeFrom.dataset_size} prompts, the dataset now has ${datasetSize}: its consumed positions would skip the wrong prompts`, 'DatasetChangedError');
  }
  // Grouped by domain, position s is the s-th row of the domains in turn: another split at the same size moves every
  // position after the first changed domain onto other prompts.
  const [was, now] = [describeDomains(resumeFrom.dataset_domains), describeDomains(domains)];
  if (was !== now) {
    throw ApplicationFailure.nonRetryable(`the checkpoint's training order was ${was}, the dataset's is now ${now}: its consumed positions would skip the wrong prompts`, 'DatasetChangedError');
  }
  return RunState.resumeFrom(resumeFrom, plan.limits, datasetSize);
}

const describeDomains = (domains: readonly DomainRows[] | undefined) =>
  domains ? `grouped by domain as ${domains.map((d) => `${d.name} (${d.rows} rows)`).join(', ')}` : 'the file order (no domain_interleave_probs)';

function legacyTotals({ snapshot, stats }: RunInput): Partial<RunTotals> | undefined {
  const counters = (snapshot as { counters?: Partial<RunTotals> } | undefined)?.counters;
  if (!stats) return counters;
  const { samples, stalenessSum, stalenessMax, partialSamples, maxPartialSpan, lastRewardMean, peakSamplesInSystem } = stats;
  return { ...counters, trainedSamples: samples, stalenessSum, stalenessMax, partialSamples, maxPartialSpan, lastRewardMean, peakSamplesInSystem };
}

/** Run-level facts an execution carries on from a legacy input too. */
export const carriedFacts = (input: RunInput) => ({
  startedAtMs: input.startedAtMs ?? input.stats?.startedAtMs,
  lastValidation: input.lastValidation ?? input.stats?.lastValidation,
});
