/**
 * Trainer recovery without an operator. The trainer's weights and optimizer live in its process: a trainer that
 * restarts (or a replacement on the same address) holds no run and is back at its launch weights, and it
 * refuses every call that names a run (409 trainer_behind; python-engines roles/trainer/api.py). The run keeps
 * what rebuilds it:
 *   - the trainer's state, saved under `stateDir` once when the run starts and then every `saveEverySteps` steps;
 *   - every step's batch in the sample store (trainStep writes it before training).
 * Recovery loads the newest saved state at or below the version wanted and replays the stored batches since it,
 * in order, each step once on the restored weights: no step is trained twice on one lineage, none skipped.
 *
 * It gives up only when nothing good remains. A state the trainer refuses as checkpoint_corrupt (its files do
 * not match their checksums) is moved aside (v<n>.corrupt; in a bucket, removed: trainer-states.ts), recorded
 * (recovery.jsonl beside the states, and the log) and the next older one is tried; when none is left, a run that began at the trainer's launch weights
 * (initTrainer wrote ORIGIN) starts again from them and replays every stored batch. A trainer AHEAD of the
 * workflow (409 trainer_ahead: a Temporal rollback lost the workflow's last steps, e.g. the dev server's SQLite
 * after an OS crash) is brought back the same way, never the workflow forward; the saved states above the
 * workflow's version belong to the lineage it lost, and are dropped.
 *
 * The states are a directory, or with a bucket store objects in the bucket (trainer-states.ts).
 */
import { Context } from '@temporalio/activity';
import { EngineRejectedError, TrainerHeldError, TrainerRecoveryError } from '../gpu-bridge';
import { batchKey } from '../core';
import type { TrainerState } from '../gpu-bridge/contracts/trainer';
import type { ActivityDeps } from './deps';
import type { TrainStepRequest } from '../gpu-bridge/contracts/trainer';
import { trainerStates, type TrainerStates } from './trainer-states';

/** A run's options of every train step (the request less its step and batch). */
export type TrainOptions = Omit<TrainStepRequest, 'step' | 'batch' | 'batch_ref'>;

/** What ties a trainer to a run, and what rebuilds it. */
export interface TrainerBinding {
  runId: string;
  /**
   * <run_dir>/<run id>/trainer-state (ids.trainerStateDir): one v<version> directory per saved state; with a bucket
   * store, s3://<bucket>/<prefix><run id>/trainer-state (RunPlan.bucketRunDir), one v<version>/ prefix of objects.
   */
  stateDir: string;
  /** Save the trainer's state after every step whose version is a multiple of this (trainer_state_save_steps). */
  saveEverySteps: number;
  /** The run's train options, to replay its stored batches exactly as they were trained. */
  options: TrainOptions;
}

/** Saved states kept: the newest is all recovery needs; one more covers a save cut short by a crash. */
const KEEP_STATES = 2;

/** The trainer is not where the run is: behind (restarted, or a step short) or ahead (the run was rolled back). */
const isElsewhere = (e: unknown) => e instanceof EngineRejectedError && (e.code === 'trainer_behind' || e.code === 'trainer_ahead');
const isCorrupt = (e: unknown) => e instanceof EngineRejectedError && e.code === 'checkpoint_corrupt';

/** Where recovery starts: replay from the trainer's own weights, or load one of these saved states (newest first). */
export type RecoveryStart = { replayFrom: number } | { load: number[] };

/**
 * Where to bring the trainer from, to `version` of run `runId`: its own weights if it holds the run at or below
 * `version`; otherwise (restarted, or ahead) a saved state at or below `version`, newest first.
 */
export function recoveryStart(state: Pick<TrainerState, 'run_id' | 'version'>, runId: string, version: number, saved: number[]): RecoveryStart {
  if (state.run_id === runId && state.version <= version) return { replayFrom: state.version };
  return { load: saved.filter((v) => v <= version).sort((a, b) => b - a) };
}

/** A state recovery passed over, and why. */
export interface SkippedState {
  version: number;
  reason: string;
}

/** The binding's states, through the run's store when they are in its bucket. */
const statesOf = (deps: Pick<ActivityDeps, 'store'>, b: TrainerBinding): TrainerStates => trainerStates(b.stateDir, deps.store);

/**
 * Runs `call`; if the trainer answers that it is behind the run (restarted, or a step ahead of its weights) or
 * ahead of it (a rolled-back run), brings it to `version` and runs `call` once more. Returns the call's result,
 * how many steps were replayed and how many saved states were passed over as corrupt.
 */
export async function withTrainerAt<T>(deps: ActivityDeps, b: TrainerBinding, version: number, signal: AbortSignal, call: () => Promise<T>): Promise<{ result: T; replayedSteps: number; skippedStates: number }> {
  try {
    return { result: await call(), replayedSteps: 0, skippedStates: 0 };
  } catch (e) {
    if (!isElsewhere(e)) throw e;
  }
  const { replayedSteps, skipped } = await bringTrainerTo(deps, b, version, signal);
  return { result: await call(), replayedSteps, skippedStates: skipped.length };
}

/** Brings the trainer to this run at `version`; returns the stored batches it replayed and the states it passed over. */
export async function bringTrainerTo(deps: ActivityDeps, b: TrainerBinding, version: number, signal: AbortSignal): Promise<{ replayedSteps: number; skipped: SkippedState[] }> {
  const state = await deps.trainer.status({ signal });
  if (state.run_id !== null && state.run_id !== b.runId) {
    throw new TrainerHeldError(`the trainer at ${deps.trainer.baseUrl} is held by run ${state.run_id}; run ${b.runId} cannot use it (two runs cannot share one trainer)`);
  }
  const states = statesOf(deps, b);
  const start = recoveryStart(state, b.runId, version, await states.saved());
  const skipped: SkippedState[] = [];
  const from = 'replayFrom' in start ? start.replayFrom : await loadNewestGood(deps, b, states, version, start.load, skipped, signal);
  if (!('replayFrom' in start)) {
    // The trainer is at `from` on the workflow's lineage now; states above `version` are of a lineage it lost.
    for (const v of (await states.present()).filter((v) => v > version)) await states.remove(v);
  }
  for (let step = from; step < version; step++) {
    const batch = deps.store.locate(batchKey(b.runId, step));
    if (!(await deps.store.has(batchKey(b.runId, step)))) throw new TrainerRecoveryError(`run ${b.runId}: cannot replay step ${step} to recover the trainer: its batch ${batch} is missing`);
    await deps.trainer.trainStep({ step, batch_ref: batch, run_id: b.runId, ...b.options }, { signal });
  }
  const how = state.run_id === b.runId && state.version > version ? 'trainer ahead of the run, brought back' : 'trainer recovered';
  Context.current().log.warn(how, { runId: b.runId, trainerVersion: state.version, restoredVersion: from, version, replayedSteps: version - from, skippedStates: skipped });
  return { replayedSteps: version - from, skipped };
}

/**
 * Loads the newest of `candidates` the trainer accepts, passing over (and moving aside) any it refuses as
 * corrupt; with none left, the launch weights if the run began at them. Returns the version loaded.
 */
async function loadNewestGood(deps: ActivityDeps, b: TrainerBinding, states: TrainerStates, version: number, candidates: number[], skipped: SkippedState[], signal: AbortSignal): Promise<number> {
  for (const v of candidates) {
    try {
      await deps.trainer.load({ path: states.path(v), run_id: b.runId }, { signal });
      return v;
    } catch (e) {
      if (!isCorrupt(e)) throw e;
      await skipState(b, states, v, (e as Error).message, skipped);
    }
  }
  const why = skipped.length ? `every saved trainer state at or below version ${version} is corrupt (${skipped.map((s) => `v${s.version}`).join(', ')})` : `no saved trainer state at or below version ${version} is in ${states.where}`;
  if (!(await states.hasOrigin())) throw new TrainerRecoveryError(`run ${b.runId}: cannot recover the trainer: ${why}, and the run did not begin at the trainer's launch weights`);
  Context.current().log.warn('trainer recovery starts from the launch weights', { runId: b.runId, why });
  await deps.trainer.reset({ run_id: b.runId }, { signal });
  return 0;
}

/** Moves a corrupt state aside (TrainerStates.setAside; a later save may write v<n> again) and records why. */
async function skipState(b: TrainerBinding, states: TrainerStates, v: number, reason: string, skipped: SkippedState[]): Promise<void> {
  await states.setAside(v);
  await states.record({ run_id: b.runId, version: v, skipped: 'corrupt', reason });
  Context.current().log.warn('trainer state skipped: corrupt', { runId: b.runId, version: v, reason });
  skipped.push({ version: v, reason });
}

/**
 * A run taking a trainer at its start: refused while another run holds it and that run's workflow is still
 * running (before either is harmed); a holder that has ended (or never existed here) gives the trainer up.
 */
export async function refuseIfHeld(deps: ActivityDeps, b: TrainerBinding, signal: AbortSignal): Promise<void> {
  const holder = (await deps.trainer.status({ signal })).run_id;
  if (holder === null || holder === b.runId) return;
  const running = await Context.current()
    .client.workflow.getHandle(holder)
    .describe()
    .then((d) => d.status.name === 'RUNNING')
    .catch((e: unknown) => {
      if ((e as Error).name === 'WorkflowNotFoundError') return false;
      throw e;
    });
  if (running) throw new TrainerHeldError(`the trainer at ${deps.trainer.baseUrl} is held by run ${holder}, which is still running; run ${b.runId} cannot share it (give each run its own trainer, or wait for ${holder} to end)`);
}

/**
 * Saves the trainer's state at `version` when it is due (every saveEverySteps, and always when `force`), unless
 * that state is saved already (a retried activity), then drops all but the newest KEEP_STATES.
 */
export async function saveTrainerState(deps: ActivityDeps, b: TrainerBinding, version: number, signal: AbortSignal, force = false): Promise<boolean> {
  if (!force && (b.saveEverySteps <= 0 || version % b.saveEverySteps !== 0)) return false;
  const states = statesOf(deps, b);
  if ((await states.saved()).includes(version)) return false;
  await deps.trainer.save({ path: states.path(version), version, run_id: b.runId }, { signal });
  // All but the newest KEEP_STATES, and whatever is older than those (a bucket's uploads cut short).
  const oldestKept = (await states.saved()).slice(-KEEP_STATES)[0] ?? version;
  for (const old of (await states.present()).filter((v) => v < oldestKept)) await states.remove(old);
  return true;
}

/** initTrainer's mark that the run began at the trainer's launch weights: recovery's last resort (see above). */
export async function markLaunchOrigin(deps: Pick<ActivityDeps, 'store'>, b: TrainerBinding): Promise<void> {
  await statesOf(deps, b).markOrigin(b.runId);
}
