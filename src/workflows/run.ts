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
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { checkpointDir, type GroupRef, groupUid, METRIC } from '../core';
import { TRAIN } from './activity-options';
import { GroupDispatch } from './dispatch';
import { EngineLock } from './engine-lock';
import { Loop } from './loop';
import { PROGRESS_ROWS, runDetails, type RunRow } from './metadata';
import { carriedFacts, checkpointManifest, domainOrder, indexDataset, initialState, runStatus, type RunInput, type RunStatus } from './run-input';
import { runMemo, type RunMemo } from './run-memo';
import { RunChildren } from './run-children';
import { roleActivities } from './routing';
import { cancelRun, groupDone, resume, status, suspend, syncWeightsUpdate } from './run-messages';
import { trainerBinding } from './run-plan';
import { POLICY_VERSION, STEP } from './search-attributes';
import { RolloutIdleClock, runCounts, stepRecord, validationRecord } from './step-metrics';

export type { RunInput, RunStatus } from './run-input';
export type { RolloutMode, RunPlan } from './run-plan';

// ---- messages (run-messages.ts: groups send groupDone without importing this file)
export { cancelRun, groupDone, resume, status, suspend, syncWeightsUpdate } from './run-messages';

// The weight sync, engine control and metrics fan out from the run's queue (every inference server, the run's records).
const { syncWeights, appendMetrics, closeTracking, pauseEngines, resumeEngines } = proxyActivities<Activities>(TRAIN);

export async function run(input: RunInput): Promise<RunStatus> {
  // ---- set-up
  const { plan } = input;
  const trainer = trainerBinding(plan);
  const { initTrainer, resumeTrainer, saveCheckpoint } = roleActivities(TRAIN, 'trainer', plan.queues);
  // The run's records in its directory, or with a bucket store in the bucket (its trackers keep their files in runDir).
  const recordsAt = { runDir: plan.runDir, ...(plan.bucketRunDir ? { recordsDir: plan.bucketRunDir } : {}) };
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
  const report = (): RunStatus => runStatus(plan, state, { suspended, enginesPaused, lastValidation, datasetSize, dataset });
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
  const children = new RunChildren(plan, new GroupDispatch(plan, datasetSize, domains), owners, trainer);
  // Admission allows it, and the remaining steps still need it (no groups started only to be cancelled at the end),
  // counting the spare groups: with a group filter or redundant env groups, the last step needs its spares too.
  // (patched: a run started under the earlier rule, which left the spares out, replays as it ran.)
  const spareSamples = patched('spares-in-last-steps') ? (plan.spareGroups ?? 0) * plan.limits.groupSize : 0;
  const stillNeeded = () => (plan.maxSteps - state.step) * plan.limits.samplesPerStep + spareSamples;
  const wanted = () => state.canDispatch() && state.samplesInSystem < stillNeeded();
  // In waves, a burst starts only once every group of the last one has reported; the burst itself fills what admission allows.
  const burstMayStart = () => !plan.waves || state.runningSamples === 0;
  const dispatcher = new Loop(() => !suspended && wanted() && burstMayStart(), async () => {
    const refs: GroupRef[] = [];
    while (wanted()) refs.push(state.dispatch());
    idle.note(state.runningSamples, Date.now());
    await children.startGroups(refs, state.version);
  });

  // ---- engine control: while suspended the inference servers pause, generations in flight frozen (keep) until resume
  const engineControl = new Loop(() => suspended !== enginesPaused, () => engines.run(async () => {
    const pause = suspended;
    if (pause === enginesPaused) return;
    if (pause) await pauseEngines({ mode: 'keep' }); else await resumeEngines();
    enginesPaused = pause;
  }));

  // The trackers each record goes to (track_with); `final` marks the run's last record, after which they close.
  const tracking = (final: boolean) => (plan.tracking ? { tracking: plan.tracking, final } : {});

  // ---- validation: the served weights scored on val_env_manager's envs, one record per validation
  const runValidation = async () => {
    const steps = state.step;
    const result = await children.validate(steps, state.version);
    lastValidation = { steps, rewardMean: result.rewardMean };
    await appendMetrics.executeWithOptions({ summary: `validation after step ${steps} · reward ${result.rewardMean.toFixed(3)}` }, [{ ...recordsAt, file: 'validation.jsonl', record: validationRecord({ run_id: plan.runId, step: steps, version: result.version, wall_s: sinceRunStart() }, result), ...tracking(steps === plan.maxSteps) }]);
  };
  const validationDue = () => plan.validation !== undefined && (state.step % plan.validation.everySteps === 0 || state.step === plan.maxSteps);
  if (!input.snapshot && plan.validation) await runValidation(); // the starting point of the curve

  // Every save_steps steps, and after the last.
  const checkpointDue = () => (plan.saveSteps > 0 && state.step % plan.saveSteps === 0) || state.step === plan.maxSteps;
  // The manifest in the run's directory; the trainer's part there too, or with a bucket store in the bucket (bucketRunDir).
  const trainerPart = (step: number) => (plan.bucketRunDir ? { trainerPath: `${checkpointDir(plan.bucketRunDir, step)}/trainer` } : {});
  const checkpoint = () => saveCheckpoint.executeWithOptions({ summary: `checkpoint after step ${state.step}` }, [{ dir: checkpointDir(plan.runDir, state.step), manifest: checkpointManifest(plan, state, datasetSize, dataset), ...trainerPart(state.step), ...trainer }]);

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
      void dispatcher.stop();
      throw ApplicationFailure.nonRetryable(`${state.failingSummary()}; last error: ${lastGroupError}`, 'RunFailingError');
    }
    const batch = state.takeBatch()!;
    const batchAt = Date.now();
    const trained = await children.trainStep(batch);
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
    await appendMetrics.executeWithOptions({ summary: `step ${batch.step} · reward ${record[METRIC.rewardMean].toFixed(3)}` }, [{ ...recordsAt, record, ...tracking(state.step === plan.maxSteps && !validationDue()) }]);
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
  await Promise.all([dispatcher.stop(), engineControl.stop()]);
  if (state.step < plan.maxSteps && !cancelled()) {
    // Keep history small: carry the state into a fresh execution; in-flight groups keep reporting to this workflow id.
    await condition(allHandlersFinished);
    return makeContinueAsNewFunc<typeof run>(memo ? { memo } : {})({ plan, snapshot: state.snapshot(), startedAtMs, ...(lastValidation ? { lastValidation } : {}), suspended, enginesPaused, owners: Object.fromEntries(owners), dataset, progress, ...(cancelRequested ? { cancelRequested } : {}) });
  }
  // Cancelled by the operator: a checkpoint of what was trained (unless the last step just saved one), to resume from.
  if (cancelled() && state.step > 0 && !checkpointDue()) await checkpoint();
  // Done: groups still generating are no longer needed.
  const groupsInFlight = await children.cancelGroups(state.inFlightGroups);
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
  return { ...report(), ...(cancelled() ? { cancelled: { atStep: state.step, groupsInFlight } } : {}) };
}
