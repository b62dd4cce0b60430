/**
 * run: the controller of one training run (ROLL Flash's AsyncController),
 * workflow id = run id. A thin shell over RunState, read top to bottom:
 *
 *   set-up       the dataset index, the state (new, carried on, or resumed), the first weights;
 *   handlers     group results (idempotent: RunState ignores repeats), suspend/resume, status, syncWeights;
 *   dispatcher   starts `group` children whenever admission control (the async ratio) allows;
 *   engines      pauses the inference servers while suspended, resumes them after;
 *   trainer      takes a ready batch, runs a `trainStep` child, syncs the weights
 *                (suspend -> model_update -> resume), records the step's metrics;
 *   continue     every few steps continue-as-new with the state; group children
 *                are ABANDONed, so they outlive the old execution and report to
 *                the same workflow id, which reaches the new one.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  makeContinueAsNewFunc,
  defineQuery,
  defineSignal,
  defineUpdate,
  executeChild,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { TRAIN } from './activity-options';
import { GroupDispatch } from './dispatch';
import { EngineLock } from './engine-lock';
import { group } from './group';
import { checkpointDir, type GroupRef, groupUid, groupWorkflowId, lockstepWorkflowId, METRIC, trainStepWorkflowId, validateWorkflowId } from '../core';
import { lockstepRollout } from './lockstep';
import { groupSummary, PROGRESS_ROWS, runDetails, trainStepSummary, validateSummary, type RunRow } from './metadata';
import { carriedFacts, domainOrder, indexDataset, initialState, type RunInput, type RunStatus } from './run-input';
import { runMemo, type RunMemo } from './run-memo';
import { trainerBinding } from './run-plan';
import type { GroupResult } from './run-buffer';
import { KIND, POLICY_VERSION, RUN_ID, STEP } from './search-attributes';
import { RolloutIdleClock, runCounts, stepRecord, validationRecord } from './step-metrics';
import { trainStep } from './train-step';
import { validate } from './validate';

export type { RunInput, RunStatus } from './run-input';
export type { RolloutMode, RunPlan } from './run-plan';

// ---- messages
/** Sent by each group to its run when its samples are done; idempotent by (epoch, position). */
export const groupDone = defineSignal<[GroupResult]>('groupDone');
export const suspend = defineSignal('suspend');
export const resume = defineSignal('resume');
/** Operator: end the run cleanly after the step in progress: no more dispatch, a checkpoint, groups in flight cancelled. */
export const cancelRun = defineSignal('cancelRun');
export const status = defineQuery<RunStatus>('status');
/** Operator update: load external weights on every inference server between train steps (pause -> update -> resume,
 * like a step's sync). The trainer keeps its own weights, so the next train step's sync replaces these. */
export const syncWeightsUpdate = defineUpdate<{ aborted: number; version: number }, [{ path: string }]>('syncWeights');

const { initTrainer, resumeTrainer, saveCheckpoint, syncWeights, appendMetrics, closeTracking, pauseEngines, resumeEngines } = proxyActivities<Activities>(TRAIN);

export async function run(input: RunInput): Promise<RunStatus> {
  // ---- set-up
  const { plan } = input;
  const trainer = trainerBinding(plan);
  // A file dataset's valid rows define the dataset size (malformed rows are reported and skipped).
  const dataset = input.snapshot ? input.dataset : await indexDataset(plan);
  const datasetSize = input.snapshot?.datasetSize ?? dataset?.size ?? plan.datasetSize;
  const state = initialState(input, datasetSize, dataset?.domains);
  const domains = domainOrder(plan, dataset); // before any engine work: a bad index fails the run at once
  const facts = carriedFacts(input);
  // Seconds since the run (the first execution of its continue-as-new chain) started: the x axis of learning curves.
  // Carried in the input: workflowInfo().startTime restarts with each execution.
  const startedAtMs = facts.startedAtMs ?? workflowInfo().startTime.getTime();
  const sinceRunStart = () => (Date.now() - startedAtMs) / 1000;
  let { lastValidation } = facts;
  let suspended = input.suspended ?? false;
  let enginesPaused = input.enginesPaused ?? false;
  const owners = new Map(Object.entries(input.owners ?? {}));
  const engines = new EngineLock();
  const idle = new RolloutIdleClock(Date.now());
  const report = (): RunStatus => ({
    runId: plan.runId,
    maxSteps: plan.maxSteps,
    ...state.view(),
    suspended,
    enginesPaused,
    ...(lastValidation ? { lastValidation } : {}),
    datasetSize,
    ...(dataset ? { dataset } : {}),
  });
  // The run's progress table in the UI (its current details): a row per step, and what runs now.
  const progress: RunRow[] = [...(input.progress ?? [])];
  const showProgress = () => setCurrentDetails(runDetails(progress, { inFlight: state.runningSamples, suspended }));
  showProgress();

  // ---- handlers
  let lastGroupError: string | undefined;
  setHandler(groupDone, (result) => {
    if (state.onGroupResult(result) === 'failed') lastGroupError = result.error;
    owners.delete(groupUid(result));
    idle.note(state.runningSamples, Date.now());
  });
  setHandler(suspend, () => {
    suspended = true;
    showProgress();
  });
  setHandler(resume, () => {
    suspended = false;
    showProgress();
  });
  setHandler(status, report);
  // (patched: a run started before cancelRun existed ignored the signal; it replays so.)
  const cancellable = patched('run-cancel');
  let cancelRequested = input.cancelRequested ?? false;
  setHandler(cancelRun, () => {
    if (!cancellable) return;
    cancelRequested = true;
    showProgress();
  });
  const cancelled = () => cancellable && cancelRequested;
  // (patched: a run started before the memo existed upserted none; it replays so.)
  const listMemo = patched('run-list-memo');
  let memo: RunMemo | undefined; // the latest upserted; continue-as-new hands it on (the server does not)
  setHandler(
    syncWeightsUpdate,
    ({ path }) =>
      engines.run(async () => {
        const r = await syncWeights.executeWithOptions({ summary: `operator weights · ${path}` }, [{ path, version: state.version, partialRollout: plan.partialRollout, runId: plan.runId }]);
        enginesPaused = false; // the sync resumes the servers; a suspended run pauses them again (engine control)
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
    const initial = input.resumeFrom?.trainer_checkpoint ? await resumeTrainer({ trainerCheckpoint: input.resumeFrom.trainer_checkpoint, ...trainer }) : await initTrainer(trainer);
    await syncWeights.executeWithOptions({ summary: `first weights · v${initial.version}` }, [{ path: initial.path, version: initial.version, partialRollout: false, runId: plan.runId }]);
  }

  // ---- dispatcher: admission-controlled group starts
  const groups = new GroupDispatch(plan, datasetSize, domains);
  const startGroups = async (refs: GroupRef[]) => {
    const attributes = (kind: string) => [{ key: RUN_ID, value: plan.runId }, { key: KIND, value: kind }];
    if (plan.rolloutMode === 'env_async') {
      await Promise.all(refs.map((ref) => {
        const args = groups.groupInput(ref, state.version);
        return startChild(group, { workflowId: groupWorkflowId(plan.runId, ref), args: [args], parentClosePolicy: ParentClosePolicy.ABANDON, typedSearchAttributes: attributes('group'), staticSummary: groupSummary(args.groupUid, args.env.type, state.version) });
      }));
      return;
    }
    const workflowId = lockstepWorkflowId(plan.runId, refs[0]!);
    for (const ref of refs) owners.set(groupUid(ref), workflowId);
    const args = { runId: plan.runId, groups: refs.map((ref) => groups.groupInput(ref, state.version)) };
    await startChild(lockstepRollout, { workflowId, args: [args], parentClosePolicy: ParentClosePolicy.ABANDON, typedSearchAttributes: attributes('lockstep'), staticSummary: `lockstep batch · ${refs.length} groups · v${state.version}` });
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
      idle.note(state.runningSamples, Date.now());
      await startGroups(refs);
    }
  })();

  // ---- engine control: while suspended the inference servers pause, generations in flight frozen (keep) until resume
  let stopEngineControl = false;
  const engineControl = (async () => {
    for (;;) {
      await condition(() => stopEngineControl || suspended !== enginesPaused);
      if (stopEngineControl) return;
      await engines.run(async () => {
        const pause = suspended;
        if (pause === enginesPaused) return;
        if (pause) await pauseEngines({ mode: 'keep' }); else await resumeEngines();
        enginesPaused = pause;
      });
    }
  })();

  // The trackers each record goes to (track_with); `final` marks the run's last record, after which they close.
  const tracking = (final: boolean) => (plan.tracking ? { tracking: plan.tracking, final } : {});

  // ---- validation: the served weights scored on val_env_manager's envs, one record per validation
  const runValidation = async () => {
    const v = plan.validation!;
    const steps = state.step;
    const result = await executeChild(validate, {
      workflowId: validateWorkflowId(plan.runId, steps),
      args: [{ runId: plan.runId, steps, version: state.version, envs: v.envs, groupSize: v.groupSize, sampling: plan.sampling, seed: plan.seed, replicate: plan.replicate }],
      typedSearchAttributes: [{ key: RUN_ID, value: plan.runId }, { key: KIND, value: 'validate' }, { key: STEP, value: steps }],
      staticSummary: validateSummary(steps, state.version),
    });
    lastValidation = { steps, rewardMean: result.rewardMean };
    await appendMetrics.executeWithOptions({ summary: `validation after step ${steps} · reward ${result.rewardMean.toFixed(3)}` }, [{ runDir: plan.runDir, file: 'validation.jsonl', record: validationRecord({ run_id: plan.runId, step: steps, version: result.version, wall_s: sinceRunStart() }, result), ...tracking(steps === plan.maxSteps) }]);
  };
  const validationDue = () => plan.validation !== undefined && (state.step % plan.validation.everySteps === 0 || state.step === plan.maxSteps);
  if (!input.snapshot && plan.validation) await runValidation(); // the starting point of the curve

  // Every save_steps steps, and after the last.
  const checkpointDue = () => (plan.saveSteps > 0 && state.step % plan.saveSteps === 0) || state.step === plan.maxSteps;
  const checkpoint = async () => {
    const { consumed } = state.snapshot();
    await saveCheckpoint.executeWithOptions({ summary: `checkpoint after step ${state.step}` }, [{
      dir: checkpointDir(plan.runDir, state.step),
      manifest: { run_id: plan.runId, step: state.step, version: state.version, consumed, seed: plan.seed, dataset_size: datasetSize, ...(dataset?.domains ? { dataset_domains: dataset.domains } : {}), config_hash: plan.configHash },
      ...trainer }]);
  };

  // ---- trainer loop
  const firstStep = state.step;
  let lastStepEnd = Date.now();
  idle.take(lastStepEnd); // idle ratios are per step: start-up and the first validation are not the first step's idle time
  // A run whose groups keep failing (a bad env config, a broken engine) stops with the cause instead of spinning.
  const failingBadly = () => state.failingBadly(plan.maxFailedGroupRatio ?? 0.2);
  while (state.step < plan.maxSteps) {
    await condition(() => (!suspended && state.batchReady()) || failingBadly() || cancelled());
    if (cancelled()) break;
    if (failingBadly()) {
      stopDispatch = true;
      throw ApplicationFailure.nonRetryable(`${state.failingSummary()}; last error: ${lastGroupError}`, 'RunFailingError');
    }
    const batch = state.takeBatch()!;
    const batchAt = Date.now();
    const trained = await executeChild(trainStep, {
      workflowId: trainStepWorkflowId(plan.runId, batch.step),
      args: [{ runId: plan.runId, step: batch.step, sampleKeys: batch.groups.flatMap((g) => g.storeKeys), options: plan.train, ...trainer }],
      typedSearchAttributes: [{ key: RUN_ID, value: plan.runId }, { key: KIND, value: 'trainStep' }, { key: STEP, value: batch.step }],
      staticSummary: trainStepSummary(batch.step, batch.groups.reduce((n, g) => n + g.samples, 0), batch.version),
    });
    const trainedAt = Date.now();
    const sync = await engines.run(async () => {
      const r = await syncWeights.executeWithOptions({ summary: `step ${batch.step} · v${trained.version} to the inference servers` }, [{ path: trained.weightsPath, version: trained.version, partialRollout: plan.partialRollout, runId: plan.runId }]);
      enginesPaused = false;
      return r;
    });
    state.onStepDone(batch);
    const now = Date.now();
    const times = { lastStepEnd, batchAt, trainedAt, now, rolloutIdleMs: idle.take(now) };
    const record = { ...stepRecord({ run_id: plan.runId, step: batch.step, version: state.version, wall_s: sinceRunStart() }, batch, times, trained, sync.aborted), ...runCounts(state.view()) };
    await appendMetrics.executeWithOptions({ summary: `step ${batch.step} · reward ${record[METRIC.rewardMean].toFixed(3)}` }, [{ runDir: plan.runDir, record, ...tracking(state.step === plan.maxSteps && !validationDue()) }]);
    lastStepEnd = now;
    if (validationDue()) await runValidation();
    progress.push({ step: state.step, maxSteps: plan.maxSteps, version: state.version, reward: record[METRIC.rewardMean], ...(lastValidation ? { validation: lastValidation } : {}), stalenessMean: record[METRIC.stalenessMean], stalenessMax: record[METRIC.stalenessMax], inFlight: state.runningSamples, suspended });
    progress.splice(0, progress.length - PROGRESS_ROWS);
    showProgress();
    if (checkpointDue()) await checkpoint();
    upsertSearchAttributes([
      { key: STEP, value: state.step },
      { key: POLICY_VERSION, value: state.version },
    ]);
    if (listMemo) upsertMemo((memo = runMemo(record[METRIC.rewardMean], lastValidation)));
    if (state.step < plan.maxSteps && (state.step - firstStep >= plan.stepsPerRun || workflowInfo().continueAsNewSuggested)) break;
  }

  // ---- continue-as-new, or done
  stopDispatch = true;
  stopEngineControl = true;
  await Promise.all([dispatcher, engineControl]);
  if (state.step < plan.maxSteps && !cancelled()) {
    // Keep history small: carry the state into a fresh execution; in-flight groups keep reporting to this workflow id.
    await condition(allHandlersFinished);
    return makeContinueAsNewFunc<typeof run>(memo ? { memo } : {})({ plan, snapshot: state.snapshot(), startedAtMs, ...(lastValidation ? { lastValidation } : {}), suspended, enginesPaused, owners: Object.fromEntries(owners), dataset, progress, ...(cancelRequested ? { cancelRequested } : {}) });
  }
  // Cancelled by the operator: a checkpoint of what was trained (unless the last step just saved one), to resume from.
  if (cancelled() && state.step > 0 && !checkpointDue()) await checkpoint();
  // Done: groups still generating are no longer needed.
  const running = new Set(state.inFlightGroups.map((ref) => owners.get(groupUid(ref)) ?? groupWorkflowId(plan.runId, ref)));
  await Promise.all([...running].map((id) => getExternalWorkflowHandle(id).cancel().catch(() => undefined)));
  // Cancelled, the run leaves nothing open: inference servers a suspended run paused resume (their frozen generations
  // belonged to the groups just cancelled), and the trackers close, as after a last record.
  // (patched: runs cancelled before this left both open; they replay so.)
  if (cancelled() && patched('run-cancel-cleanup')) {
    if (enginesPaused) {
      await engines.run(async () => {
        await resumeEngines();
        enginesPaused = false;
      });
    }
    if (plan.tracking) await closeTracking({ runId: plan.runId });
  }
  return { ...report(), ...(cancelled() ? { cancelled: { atStep: state.step, groupsInFlight: running.size } } : {}) };
}
