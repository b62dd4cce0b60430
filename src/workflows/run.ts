/**
 * run: the controller of one training run (ROLL Flash's AsyncController),
 * workflow id = run id. A thin loop over RunState:
 *
 * - the dispatcher starts a `group` child whenever admission control (the
 *   async ratio) allows, in the seeded per-epoch prompt order;
 * - group results arrive by signal (idempotent: RunState ignores repeats);
 * - the trainer loop takes a batch when one is ready, runs a `trainStep`
 *   child, syncs the weights (suspend -> model_update -> resume), marks the
 *   batch consumed and writes the step's metrics;
 * - every few steps it continues-as-new with RunState's snapshot; group
 *   children are ABANDONed, so they outlive the old run and report to the
 *   same workflow id, which reaches the new run.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  defineUpdate,
  executeChild,
  getExternalWorkflowHandle,
  log,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, CheckpointManifest, Sampling, TrainOptions } from '../activities';
import type { DatasetIndex } from '../envs/dataset';
import { ENV, TRAIN } from './activity-options';
import { group, groupDone, type GroupFilter, type GroupInput } from './group';
import { lockstepRollout } from './lockstep';
import { groupUid, RunState, type AdmissionLimits, type GroupRef, type RunCounters, type RunSnapshot } from './run-state';
import { KIND, POLICY_VERSION, RUN_ID, STEP } from './search-attributes';
import { epochOrder, splitmix32 } from './shuffle';
import { trainStep } from './train-step';
import { validate, type ValidationEnv } from './validate';
import type { EnvSpec } from './trajectory';

const { datasetIndex } = proxyActivities<Activities>(ENV);
const { initTrainer, resumeTrainer, saveCheckpoint, syncWeights, appendMetrics, pauseEngines, resumeEngines } = proxyActivities<Activities>(TRAIN);

/** Everything the run needs, computed from the run config on the client (workflows never read files). */
export interface RunPlan {
  runId: string;
  runDir: string;
  limits: AdmissionLimits;
  datasetSize: number;
  seed: number;
  maxSteps: number;
  partialRollout: boolean;
  /** Prompt replication (see GroupInput.replicate); always on for multi-turn envs. */
  replicate: boolean;
  /** generate_opt_level 0: dispatch in waves, the next only when no group is in flight (the batch-mode baseline). */
  waves?: boolean;
  /** Groups started beyond what the remaining steps need: redundant env groups and max_additional_running_prompts (Derived.spare_groups). */
  spareGroups?: number;
  /** max_failed_group_ratio: the share of failed groups at which the run stops (from 4 failures on). */
  maxFailedGroupRatio?: number;
  /** env_async: every trajectory its own workflow; lockstep: the groups dispatched together advance turn by turn as one batch (baseline). */
  rolloutMode: RolloutMode;
  /** The envs (train_env_manager tags) and how many of every num_env_groups positions each gets (num_groups_partition); a group's env follows its position. */
  envs: { tag: string; groupsPerStep: number; spec: EnvSpec; maxTokens: number }[];
  sampling: Omit<Sampling, 'seed' | 'max_tokens'>;
  filter: GroupFilter;
  train: TrainOptions;
  /** Continue-as-new after this many steps in one workflow run. */
  stepsPerRun: number;
  /** val_env_manager's envs, validated before training, every `everySteps` steps and at the end. */
  validation?: { envs: ValidationEnv[]; groupSize: number; everySteps: number };
  /** Checkpoint every N steps (0: only at the end). */
  saveSteps: number;
  configHash: string;
}

export type RolloutMode = 'env_async' | 'lockstep';

/** Running totals over consumed batches, carried across continue-as-new. */
export interface RunStats {
  batches: number;
  samples: number;
  stalenessSum: number;
  stalenessMax: number;
  partialSamples: number;
  maxPartialSpan: number;
  lastRewardMean: number;
  /** Most samples ever buffered, training or running right after a dispatch: admission control's bound, as recorded. */
  peakSamplesInSystem: number;
  /** The latest validation: mean reward of the weights after `steps` steps. */
  lastValidation?: { steps: number; rewardMean: number };
  /** When the run's first execution started (epoch ms): wall_s counts from here across continue-as-new. */
  startedAtMs?: number;
}

export interface RunInput {
  plan: RunPlan;
  /** Start from this checkpoint instead of the initial weights. */
  resumeFrom?: CheckpointManifest;
  snapshot?: RunSnapshot;
  stats?: RunStats;
  suspended?: boolean;
  /** Whether this run left the inference servers paused (suspend); carried so resume unpauses them after continue-as-new. */
  enginesPaused?: boolean;
  /** The file dataset's index, taken at the first run's start. */
  dataset?: DatasetIndex;
  /** Workflow ids of lockstep batches by group uid (env_async groups are found by their own id). */
  owners?: Record<string, string>;
}

export interface RunStatus {
  runId: string;
  step: number;
  maxSteps: number;
  version: number;
  suspended: boolean;
  /** The inference servers are paused for this run's suspension (generations in flight frozen). */
  enginesPaused: boolean;
  buffered: number;
  running: number;
  training: boolean;
  samplesInSystem: number;
  maxSamplesInSystem: number;
  counters: RunCounters;
  staleness: { mean: number; max: number };
  partial: { ratio: number; maxSpan: number };
  lastRewardMean: number;
  peakSamplesInSystem: number;
  lastValidation?: { steps: number; rewardMean: number };
  /** Prompts per epoch. */
  datasetSize: number;
  /** A file dataset's index: valid rows, malformed rows (skipped) and the first problems. */
  dataset?: DatasetIndex;
}

export const suspend = defineSignal('suspend');
export const resume = defineSignal('resume');
export const status = defineQuery<RunStatus>('status');
/**
 * Operator update: load external weights on every inference server, between
 * train steps (pause -> update -> resume, like a step's sync). The trainer
 * keeps its own weights, so the next train step's sync replaces these.
 */
export const syncWeightsUpdate = defineUpdate<{ aborted: number; version: number }, [{ path: string }]>('syncWeights');

/** The first file-backed env's index (envs that draw episodes from the seed have none). */
async function indexDataset(plan: RunPlan): Promise<DatasetIndex | undefined> {
  const indexes = await Promise.all(plan.envs.map((e) => datasetIndex({ envType: e.spec.type, envConfig: e.spec.config })));
  const index = indexes.find((i) => i !== null) ?? undefined;
  if (index && index.malformed > 0) log.warn('malformed dataset rows skipped', { malformed: index.malformed, problems: index.problems });
  return index;
}

const emptyStats = (): RunStats => ({ batches: 0, samples: 0, stalenessSum: 0, stalenessMax: 0, partialSamples: 0, maxPartialSpan: 0, lastRewardMean: 0, peakSamplesInSystem: 0 });

export async function run(input: RunInput): Promise<RunStatus> {
  const { plan } = input;
  // A file dataset's valid rows define the dataset size (malformed rows are reported and skipped).
  const dataset = input.snapshot ? input.dataset : await indexDataset(plan);
  const datasetSize = input.snapshot?.datasetSize ?? dataset?.size ?? plan.datasetSize;
  if (input.resumeFrom && input.resumeFrom.dataset_size !== datasetSize) {
    throw ApplicationFailure.nonRetryable(`the checkpoint was taken over ${input.resumeFrom.dataset_size} prompts, the dataset now has ${datasetSize}: its consumed positions would skip the wrong prompts`, 'DatasetChangedError');
  }
  const state = input.snapshot
    ? RunState.restore(input.snapshot)
    : input.resumeFrom
      ? RunState.resumeFrom(input.resumeFrom, plan.limits, datasetSize)
      : new RunState(plan.limits, datasetSize);
  const stats = input.stats ?? emptyStats();
  // Seconds since the run (the first execution of its continue-as-new chain) started: the x axis of
  // learning curves. Carried in the stats: workflowInfo().startTime, documented as the chain's start,
  // restarted with each execution here (wall_s fell back at every continue-as-new).
  stats.startedAtMs ??= workflowInfo().startTime.getTime();
  const sinceRunStart = () => (Date.now() - stats.startedAtMs!) / 1000;
  let suspended = input.suspended ?? false;
  let enginesPaused = input.enginesPaused ?? false;
  const owners = new Map(Object.entries(input.owners ?? {}));
  // The inference servers take one control sequence at a time (a step's sync, an operator sync, a suspend's pause).
  let enginesBusy = false;
  const withEngines = async <T>(fn: () => Promise<T>): Promise<T> => {
    await condition(() => !enginesBusy);
    enginesBusy = true;
    try {
      return await fn();
    } finally {
      enginesBusy = false;
    }
  };

  const report = (): RunStatus => ({
    runId: plan.runId,
    step: state.step,
    maxSteps: plan.maxSteps,
    version: state.version,
    suspended,
    enginesPaused,
    buffered: state.bufferedSamples,
    running: state.runningSamples,
    training: state.training,
    samplesInSystem: state.samplesInSystem,
    maxSamplesInSystem: plan.limits.maxSamplesInSystem,
    counters: { ...state.counters },
    staleness: { mean: stats.samples ? stats.stalenessSum / stats.samples : 0, max: stats.stalenessMax },
    partial: { ratio: stats.samples ? stats.partialSamples / stats.samples : 0, maxSpan: stats.maxPartialSpan },
    lastRewardMean: stats.lastRewardMean,
    peakSamplesInSystem: stats.peakSamplesInSystem,
    ...(stats.lastValidation ? { lastValidation: stats.lastValidation } : {}),
    datasetSize,
    ...(dataset ? { dataset } : {}),
  });
  // Rollout idle time (verl's rollouter/idle_ratio): stretches with no trajectory running.
  let rolloutIdleMs = 0;
  let rolloutIdleSince: number | undefined = Date.now();
  const noteRolloutActivity = () => {
    if (state.runningSamples > 0 && rolloutIdleSince !== undefined) {
      rolloutIdleMs += Date.now() - rolloutIdleSince;
      rolloutIdleSince = undefined;
    } else if (state.runningSamples === 0 && rolloutIdleSince === undefined) rolloutIdleSince = Date.now();
  };
  let lastGroupError: string | undefined;
  setHandler(groupDone, (result) => {
    if (state.onGroupResult(result) === 'failed') lastGroupError = result.error;
    owners.delete(groupUid(result));
    noteRolloutActivity();
  });
  setHandler(suspend, () => void (suspended = true));
  setHandler(resume, () => void (suspended = false));
  setHandler(status, report);
  setHandler(
    syncWeightsUpdate,
    ({ path }) =>
      withEngines(async () => {
        const r = await syncWeights({ path, version: state.version, partialRollout: plan.partialRollout });
        enginesPaused = false; // the sync resumes the servers; a suspended run pauses them again below
        return { aborted: r.aborted, version: state.version };
      }),
    {
      validator: ({ path }) => {
        if (typeof path !== 'string' || path.length === 0) throw new Error('syncWeights needs {path: "<weights directory>"}');
      },
    },
  );

  if (!input.snapshot) {
    // Every server starts this run at its first version (0, or the checkpoint's), whatever it served before.
    const initial = input.resumeFrom?.trainer_checkpoint ? await resumeTrainer({ trainerCheckpoint: input.resumeFrom.trainer_checkpoint }) : await initTrainer();
    await syncWeights({ path: initial.path, version: initial.version, partialRollout: false });
  }

  // ---- dispatcher: admission-controlled group starts
  const orders = new Map<number, number[]>();
  const envSeedOf = (ref: GroupRef) => {
    if (!orders.has(ref.epoch)) orders.set(ref.epoch, epochOrder(datasetSize, plan.seed, ref.epoch));
    return orders.get(ref.epoch)![ref.position]!;
  };
  // Positions cycle through the tags in blocks of num_groups_partition, so every step's groups mix the envs as configured.
  const groupsPerCycle = plan.envs.reduce((n, e) => n + e.groupsPerStep, 0);
  const envOf = (ref: GroupRef) => {
    let slot = ref.position % groupsPerCycle;
    for (const e of plan.envs) {
      if (slot < e.groupsPerStep) return e;
      slot -= e.groupsPerStep;
    }
    throw new Error('unreachable: slot beyond the partition');
  };
  const groupArgs = (ref: GroupRef): GroupInput => ({
      runId: plan.runId,
      ref,
      groupUid: groupUid(ref),
      groupSize: plan.limits.groupSize,
      startVersion: state.version,
      env: envOf(ref).spec,
      envSeed: envSeedOf(ref),
      sampling: { ...plan.sampling, max_tokens: envOf(ref).maxTokens, seed: Math.floor(splitmix32(plan.seed ^ (ref.epoch * 7919 + ref.position))() * 2 ** 31) },
      filter: plan.filter,
      replicate: plan.replicate,
  });
  const startGroups = async (refs: GroupRef[]) => {
    if (plan.rolloutMode === 'env_async') {
      await Promise.all(refs.map((ref) => startChild(group, {
        workflowId: `${plan.runId}/${groupUid(ref)}`,
        args: [groupArgs(ref)],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        typedSearchAttributes: [{ key: RUN_ID, value: plan.runId }, { key: KIND, value: 'group' }],
      })));
      return;
    }
    const workflowId = `${plan.runId}/lockstep-${groupUid(refs[0]!)}`;
    for (const ref of refs) owners.set(groupUid(ref), workflowId);
    await startChild(lockstepRollout, {
      workflowId,
      args: [{ runId: plan.runId, groups: refs.map(groupArgs) }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      typedSearchAttributes: [{ key: RUN_ID, value: plan.runId }, { key: KIND, value: 'lockstep' }],
    });
  };
  let stopDispatch = false;
  // Admission allows it, and the remaining steps still need it (no groups started only to be cancelled at the end),
  // counting the spare groups: with a group filter or redundant env groups, the last step needs its spares too.
  // (patched: a run started under the earlier rule, which left the spares out, replays as it ran.)
  const spareSamples = patched('spares-in-last-steps') ? (plan.spareGroups ?? 0) * plan.limits.groupSize : 0;
  const stillNeeded = () => (plan.maxSteps - state.step) * plan.limits.samplesPerStep + spareSamples;
  const wanted = () => state.canDispatch() && state.samplesInSystem < stillNeeded();
  // In waves, a burst starts only once every group of the last one has reported; the burst itself fills what admission allows.
  const burstMayStart = () => !plan.waves || state.runningSamples === 0;
  const dispatcher = (async () => {
    for (;;) {
      await condition(() => stopDispatch || (!suspended && wanted() && burstMayStart()));
      if (stopDispatch) return;
      const refs: GroupRef[] = [];
      while (wanted()) refs.push(state.dispatch());
      noteRolloutActivity();
      stats.peakSamplesInSystem = Math.max(stats.peakSamplesInSystem, state.samplesInSystem);
      await startGroups(refs);
    }
  })();

  // ---- suspend/resume of the inference servers: generations in flight freeze (keep) until resume
  let stopEngineControl = false;
  const engineControl = (async () => {
    for (;;) {
      await condition(() => stopEngineControl || suspended !== enginesPaused);
      if (stopEngineControl) return;
      await withEngines(async () => {
        const pause = suspended;
        if (pause === enginesPaused) return;
        if (pause) await pauseEngines({ mode: 'keep' }); else await resumeEngines();
        enginesPaused = pause;
      });
    }
  })();

  // ---- validation: the served weights scored on val_env_manager's envs, one record per validation
  const runValidation = async () => {
    const v = plan.validation!;
    const steps = state.step;
    const result = await executeChild(validate, {
      workflowId: `${plan.runId}/val-${steps}`,
      args: [{ runId: plan.runId, steps, version: state.version, envs: v.envs, groupSize: v.groupSize, sampling: plan.sampling, seed: plan.seed, replicate: plan.replicate }],
      typedSearchAttributes: [{ key: RUN_ID, value: plan.runId }, { key: KIND, value: 'validate' }, { key: STEP, value: steps }],
    });
    stats.lastValidation = { steps, rewardMean: result.rewardMean };
    await appendMetrics({
      runDir: plan.runDir,
      file: 'validation.jsonl',
      record: {
        run_id: plan.runId,
        step: steps,
        version: result.version,
        wall_s: sinceRunStart(),
        'val/reward_mean': result.rewardMean,
        'val/samples': result.samples,
        'val/failed_groups': result.failedGroups,
        ...Object.fromEntries(Object.entries(result.byTag).map(([tag, t]) => [`val/${tag}/reward_mean`, t.rewardMean])),
      },
    });
  };
  const validationDue = () => plan.validation !== undefined && (state.step % plan.validation.everySteps === 0 || state.step === plan.maxSteps);
  if (!input.snapshot && plan.validation) await runValidation(); // the starting point of the curve

  // ---- trainer loop
  const firstStep = state.step;
  let lastStepEnd = Date.now();
  // Idle ratios are per step: start-up and the first validation are not the first step's idle time.
  rolloutIdleMs = 0;
  if (rolloutIdleSince !== undefined) rolloutIdleSince = lastStepEnd;
  // A run whose groups keep failing (a bad env config, a broken engine) stops with the cause instead of spinning.
  const failingBadly = () => {
    const { failedGroups, dispatchedGroups } = state.counters;
    return failedGroups >= 4 && failedGroups >= (plan.maxFailedGroupRatio ?? 0.2) * dispatchedGroups;
  };
  while (state.step < plan.maxSteps) {
    await condition(() => (!suspended && state.batchReady()) || failingBadly());
    if (failingBadly()) {
      stopDispatch = true;
      throw ApplicationFailure.nonRetryable(`${state.counters.failedGroups} of ${state.counters.dispatchedGroups} groups failed; last error: ${lastGroupError}`, 'RunFailingError');
    }
    const batch = state.takeBatch()!;
    const batchAt = Date.now();
    const trained = await executeChild(trainStep, {
      workflowId: `${plan.runId}/train-${batch.step}`,
      args: [{ runId: plan.runId, step: batch.step, sampleKeys: batch.groups.flatMap((g) => g.storeKeys), options: plan.train }],
      typedSearchAttributes: [
        { key: RUN_ID, value: plan.runId },
        { key: KIND, value: 'trainStep' },
        { key: STEP, value: batch.step },
      ],
    });
    const trainedAt = Date.now();
    const sync = await withEngines(async () => {
      const r = await syncWeights({ path: trained.weightsPath, version: trained.version, partialRollout: plan.partialRollout });
      enginesPaused = false;
      return r;
    });
    state.onStepDone(batch);
    const samples = batch.groups.reduce((n, g) => n + g.samples, 0);
    const partialSamples = batch.groups.reduce((n, g) => n + g.partialSamples, 0);
    const maxSpan = Math.max(...batch.groups.map((g) => g.maxSpan));
    const rewardMean = batch.groups.reduce((n, g) => n + g.rewardMean * g.samples, 0) / samples;
    Object.assign(stats, {
      lastRewardMean: rewardMean,
      batches: stats.batches + 1,
      samples: stats.samples + samples,
      stalenessSum: stats.stalenessSum + batch.staleness.mean * samples,
      stalenessMax: Math.max(stats.stalenessMax, batch.staleness.max),
      partialSamples: stats.partialSamples + partialSamples,
      maxPartialSpan: Math.max(stats.maxPartialSpan, maxSpan),
    });
    const now = Date.now();
    const idleMs = rolloutIdleMs + (rolloutIdleSince === undefined ? 0 : now - rolloutIdleSince);
    rolloutIdleMs = 0;
    if (rolloutIdleSince !== undefined) rolloutIdleSince = now;
    await appendMetrics({
      runDir: plan.runDir,
      record: {
        run_id: plan.runId,
        step: batch.step,
        version: state.version,
        wall_s: sinceRunStart(),
        'rollout/samples': samples,
        'rollout/tokens': batch.groups.reduce((n, g) => n + g.tokens, 0),
        'rollout/reward_mean': rewardMean,
        'staleness/mean': batch.staleness.mean,
        'staleness/max': batch.staleness.max,
        'partial/ratio': partialSamples / samples,
        'partial/max_span': maxSpan,
        'timing/wait_batch': (batchAt - lastStepEnd) / 1000,
        'timing/train': (trainedAt - batchAt) / 1000,
        'timing/sync_weights': (now - trainedAt) / 1000,
        'idle/trainer': (batchAt - lastStepEnd) / Math.max(1, now - lastStepEnd),
        'idle/rollout': idleMs / Math.max(1, now - lastStepEnd),
        'sync/aborted_requests': sync.aborted,
        ...Object.fromEntries(Object.entries(trained.metrics).map(([k, v]) => [`train/${k}`, v])),
      },
    });
    lastStepEnd = now;
    if (validationDue()) await runValidation();
    if ((plan.saveSteps > 0 && state.step % plan.saveSteps === 0) || state.step === plan.maxSteps) {
      const { consumed } = state.snapshot();
      await saveCheckpoint({
        dir: `${plan.runDir}/checkpoints/step-${String(state.step).padStart(6, '0')}`,
        manifest: { run_id: plan.runId, step: state.step, version: state.version, consumed, seed: plan.seed, dataset_size: datasetSize, config_hash: plan.configHash },
      });
    }
    upsertSearchAttributes([
      { key: STEP, value: state.step },
      { key: POLICY_VERSION, value: state.version },
    ]);
    if (state.step < plan.maxSteps && (state.step - firstStep >= plan.stepsPerRun || workflowInfo().continueAsNewSuggested)) break;
  }

  stopDispatch = true;
  stopEngineControl = true;
  await Promise.all([dispatcher, engineControl]);
  if (state.step < plan.maxSteps) {
    // Keep history small: carry the state into a fresh run; in-flight groups keep reporting to this workflow id.
    await condition(allHandlersFinished);
    return continueAsNew<typeof run>({ plan, snapshot: state.snapshot(), stats, suspended, enginesPaused, owners: Object.fromEntries(owners), dataset });
  }
  // Done: groups still generating are no longer needed.
  const running = new Set(state.inFlightGroups.map((ref) => owners.get(groupUid(ref)) ?? `${plan.runId}/${groupUid(ref)}`));
  await Promise.all([...running].map((id) => getExternalWorkflowHandle(id).cancel().catch(() => undefined)));
  return report();
}
