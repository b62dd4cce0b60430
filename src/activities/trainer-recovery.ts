/**
 * Trainer recovery without an operator. The trainer's weights and optimizer live in its process: a trainer that
 * restarts (or a replacement on the same address) holds no run and is back at its launch weights, and it
 * refuses every call that names a run (409 trainer_behind; python-engines roles/trainer/api.py). The run keeps
 * what rebuilds it:
 *   - the trainer's state, saved under `stateDir` once when the run starts and then every `saveEverySteps` steps;
 *   - every step's batch in the sample store (trainStep writes it before training).
 * Recovery loads the newest saved state at or below the version wanted and replays the stored batches since it,
 * in order, each step once on the restored weights: no step is trained twice on one lineage, none skipped.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { EngineRejectedError, TrainerHeldError, TrainerRecoveryError } from '../gpu-bridge';
import { batchKey } from '../core';
import type { ActivityDeps } from './deps';
import type { TrainStepRequest } from '../gpu-bridge/contracts/trainer';

/** A run's options of every train step (the request less its step and batch). */
export type TrainOptions = Omit<TrainStepRequest, 'step' | 'batch' | 'batch_ref'>;

/** What ties a trainer to a run, and what rebuilds it. */
export interface TrainerBinding {
  runId: string;
  /** <run_dir>/<run id>/trainer-state (ids.trainerStateDir): one v<version> directory per saved state. */
  stateDir: string;
  /** Save the trainer's state after every step whose version is a multiple of this (trainer_state_save_steps). */
  saveEverySteps: number;
  /** The run's train options, to replay its stored batches exactly as they were trained. */
  options: TrainOptions;
}

/** The trainer's checkpoint meta file (api.py CHECKPOINT_META): a state directory holding it is complete. */
const COMPLETE_MARKER = 'rollflow_checkpoint.json';
/** Saved states kept: the newest is all recovery needs; one more covers a save cut short by a crash. */
const KEEP_STATES = 2;

const isBehind = (e: unknown) => e instanceof EngineRejectedError && e.code === 'trainer_behind';

/** Versions with a complete saved state, ascending. */
export function savedVersions(stateDir: string): number[] {
  if (!existsSync(stateDir)) return [];
  return readdirSync(stateDir)
    .flatMap((name) => (/^v\d+$/.test(name) && existsSync(path.join(stateDir, name, COMPLETE_MARKER)) ? [Number(name.slice(1))] : []))
    .sort((a, b) => a - b);
}

/**
 * Runs `call`; if the trainer answers that it is behind the run (restarted, or a step ahead of its weights),
 * brings it to `version` and runs `call` once more. Returns the call's result and how many steps were replayed.
 */
export async function withTrainerAt<T>(deps: ActivityDeps, b: TrainerBinding, version: number, signal: AbortSignal, call: () => Promise<T>): Promise<{ result: T; replayedSteps: number }> {
  try {
    return { result: await call(), replayedSteps: 0 };
  } catch (e) {
    if (!isBehind(e)) throw e;
  }
  const replayedSteps = await bringTrainerTo(deps, b, version, signal);
  return { result: await call(), replayedSteps };
}

/** Brings the trainer to this run at `version`; returns the number of stored batches it replayed. */
export async function bringTrainerTo(deps: ActivityDeps, b: TrainerBinding, version: number, signal: AbortSignal): Promise<number> {
  const state = await deps.trainer.status({ signal });
  if (state.run_id !== null && state.run_id !== b.runId) {
    throw new TrainerHeldError(`the trainer at ${deps.trainer.baseUrl} is held by run ${state.run_id}; run ${b.runId} cannot use it (two runs cannot share one trainer)`);
  }
  if (state.run_id === b.runId && state.version > version) {
    throw new TrainerRecoveryError(`the trainer is at version ${state.version}, ahead of the ${version} run ${b.runId} asks for; it cannot go back`);
  }
  let from = state.version;
  if (state.run_id !== b.runId) {
    // Restarted: its weights are its launch weights, whatever its version says. Start from the newest saved state.
    const base = savedVersions(b.stateDir).filter((v) => v <= version).pop();
    if (base === undefined) throw new TrainerRecoveryError(`run ${b.runId}: the trainer restarted and no saved trainer state at or below version ${version} is in ${b.stateDir}`);
    await deps.trainer.load({ path: path.join(b.stateDir, `v${base}`), run_id: b.runId }, { signal });
    from = base;
  }
  for (let step = from; step < version; step++) {
    const batch = deps.store.locate(batchKey(b.runId, step));
    if (!existsSync(batch)) throw new TrainerRecoveryError(`run ${b.runId}: cannot replay step ${step} to recover the trainer: its batch ${batch} is missing`);
    await deps.trainer.trainStep({ step, batch_ref: batch, run_id: b.runId, ...b.options }, { signal });
  }
  Context.current().log.warn('trainer recovered', { runId: b.runId, restoredVersion: from, version, replayedSteps: version - from });
  return version - from;
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
  if (savedVersions(b.stateDir).includes(version)) return false;
  await deps.trainer.save({ path: path.join(b.stateDir, `v${version}`), version, run_id: b.runId }, { signal });
  for (const old of savedVersions(b.stateDir).slice(0, -KEEP_STATES)) rmSync(path.join(b.stateDir, `v${old}`), { recursive: true, force: true });
  return true;
}
