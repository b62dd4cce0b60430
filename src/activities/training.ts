/**
 * Training-side activities: assemble a batch, run the train step, export the
 * new weights, and the weight sync (ROLL Flash's suspend -> model_update ->
 * resume) on every inference server.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { observeRecord } from '../monitoring/run-metrics';
import { CHECKPOINT_MANIFEST, compareSampleUids, isObjectRef, REPLAYED_STEPS, SKIPPED_STATES, type TrackingSpec } from '../core';
import { engineHealth, isServerLost, type InferenceClient } from '../gpu-bridge';
import { S3SampleStore, writeFileDurable } from '../store';
import type { Sample } from '../gpu-bridge/contracts/trainer';
import type { ActivityDeps } from './deps';
import { withHeartbeat } from './heartbeat';
import { runRecords, type RecordFile, type RunRecord } from './run-records';
import { markLaunchOrigin, refuseIfHeld, saveTrainerState, withTrainerAt, type TrainerBinding, type TrainOptions } from './trainer-recovery';

/** What a checkpoint records (SkyRL's consumed-UID checkpoint): enough to resume exactly. */
export interface CheckpointManifest {
  run_id: string;
  step: number;
  version: number;
  /** Per epoch, the positions in that epoch's seeded order already consumed (trained, filtered, dropped or failed). */
  consumed: [epoch: number, ranges: [number, number][]][];
  seed: number;
  dataset_size: number;
  /** The training rows per domain when the order was grouped by domain (domain_interleave_probs); absent otherwise. */
  dataset_domains?: { name: string; rows: number }[];
  config_hash: string;
  /** Set by saveCheckpoint: the trainer's model + optimizer + RNG state. */
  trainer_checkpoint?: string;
}

/** The run_id field of a trainer call, when the run is bound (runs recorded before binding send none). */
const runOf = (b: TrainerBinding | undefined) => (b ? { run_id: b.runId } : {});

/** `call` with recovery when the run is bound; as is otherwise. */
const atVersion = <T>(deps: ActivityDeps, b: TrainerBinding | undefined, version: number, signal: AbortSignal, call: () => Promise<T>) =>
  b ? withTrainerAt(deps, b, version, signal, call) : call().then((result) => ({ result, replayedSteps: 0, skippedStates: 0 }));

type Server = [url: string, client: InferenceClient];

/**
 * Runs `call` on every server at once. A server whose connection fails is
 * marked down and left out (catch-up brings it back); other failures are
 * returned for the caller to raise once every server was handled.
 */
async function onEachReachable<T>(deps: ActivityDeps, servers: Server[], call: (c: InferenceClient) => Promise<T>) {
  const settled = await Promise.allSettled(servers.map(([, c]) => call(c)));
  const done: [Server, T][] = [];
  const failures: unknown[] = [];
  settled.forEach((s, i) => {
    const server = servers[i]!;
    if (s.status === 'fulfilled') done.push([server, s.value]);
    else if (isServerLost(s.reason)) deps.pool.markDown(server[0]);
    else failures.push(s.reason);
  });
  return { done, failures };
}

/** How long a weight sync waits for a server's GET /health before it leaves the server out (marked down). */
export const SYNC_PROBE_MS = 5_000;

/**
 * The servers that answer GET /health within SYNC_PROBE_MS; the others are marked down and left out, so the
 * prober catches them up once they answer. A server cut off by the network (or hung) resets nothing: a sync's
 * request on a kept-alive connection to it would wait for its answer until the cut healed, and hold the run.
 */
async function answering(deps: ActivityDeps, servers: Server[], signal: AbortSignal): Promise<Server[]> {
  const answered = await Promise.all(servers.map(([url]) => engineHealth(url, { timeoutMs: SYNC_PROBE_MS, signal }).then(() => true, () => false)));
  servers.forEach(([url], i) => answered[i] || deps.pool.markDown(url));
  return servers.filter((_, i) => answered[i]);
}

export function trainingActivities(deps: ActivityDeps) {
  return {
    /**
     * A new run starts from the initial weights: the trainer is reset to version 0 and bound to the run (refused
     * while another live run holds it), its state saved as the base of any recovery, and the weights exported.
     */
    async initTrainer(input: { binding?: TrainerBinding } = {}): Promise<{ path: string; version: number }> {
      const b = input.binding;
      return withHeartbeat(async (signal) => {
        if (b) await refuseIfHeld(deps, b, signal);
        await deps.trainer.reset(b ? { run_id: b.runId } : {}, { signal });
        if (b) {
          await saveTrainerState(deps, b, 0, signal, true);
          await markLaunchOrigin(deps, b);
        }
        return deps.trainer.exportWeights({ version: 0, ...runOf(b) }, { signal });
      });
    },

    /** A resumed run starts from a checkpoint: the trainer loads it (bound to the run, as initTrainer), and exports its weights. */
    async resumeTrainer(input: { trainerCheckpoint: string; binding?: TrainerBinding }): Promise<{ path: string; version: number }> {
      const b = input.binding;
      return withHeartbeat(async (signal) => {
        if (b) await refuseIfHeld(deps, b, signal);
        const loaded = await deps.trainer.load({ path: input.trainerCheckpoint, ...runOf(b) }, { signal });
        if (b) await saveTrainerState(deps, b, loaded.version, signal, true);
        return deps.trainer.exportWeights({ version: loaded.version, ...runOf(b) }, { signal });
      });
    },

    /**
     * Trainer state first, manifest last: a manifest exists only for a complete checkpoint. A restarted trainer is recovered first, never saved as the run's step.
     * The trainer also writes the policy as a Hugging Face directory, <trainer part>/hf, for use outside rollflow. The
     * trainer's part is <dir>/trainer, or `trainerPath`. With a bucket store that is an s3:// ref (RunPlan.bucketRunDir)
     * and the whole checkpoint lives in the bucket: its manifest is the object beside the trainer's part, so a run on
     * another host resumes from it, and nothing is written to this worker's disk. Returns where the checkpoint is.
     */
    async saveCheckpoint(input: { dir: string; manifest: CheckpointManifest; binding?: TrainerBinding; trainerPath?: string }): Promise<string> {
      return withHeartbeat(async (signal) => {
        const trainerPath = input.trainerPath ?? path.join(input.dir, 'trainer');
        const save = () => deps.trainer.save({ path: trainerPath, version: input.manifest.version, export_hf: true, ...runOf(input.binding) }, { signal });
        await atVersion(deps, input.binding, input.manifest.version, signal, save);
        const manifest = { ...input.manifest, trainer_checkpoint: trainerPath };
        if (isObjectRef(trainerPath)) {
          // s3://<bucket>/<run>/checkpoints/step-N/trainer: the checkpoint is the ref above it (posix dirname keeps "s3://").
          const checkpointRef = path.posix.dirname(trainerPath);
          await S3SampleStore.at(checkpointRef, deps.store).put(CHECKPOINT_MANIFEST, manifest);
          return checkpointRef;
        }
        await mkdir(input.dir, { recursive: true });
        await writeFileDurable(path.join(input.dir, CHECKPOINT_MANIFEST), JSON.stringify(manifest, null, 2));
        return input.dir;
      });
    },

    /** Gathers the batch's samples into one JSON-lines file the trainer reads, in the canonical order (compareSampleUids); returns its path. */
    async writeBatch(input: { batchKey: string; sampleKeys: string[] }): Promise<string> {
      const samples = await Promise.all(input.sampleKeys.map((k) => deps.store.get<Sample>(k)));
      samples.sort((a, b) => compareSampleUids(a.uid, b.uid));
      await deps.store.putLines(input.batchKey, samples);
      return deps.store.locate(input.batchKey);
    },

    /**
     * One train step; the trainer is idempotent by step, so a retried activity never trains a batch twice. A
     * restarted trainer is recovered first (trainer-recovery.ts; train/recovery/replayed_steps counts the batches
     * replayed), and the trainer's state is saved when due.
     */
    async runTrainStep(input: { step: number; batchPath: string; options: TrainOptions; binding?: TrainerBinding }) {
      const b = input.binding;
      return withHeartbeat(async (signal) => {
        const train = () => deps.trainer.trainStep({ step: input.step, batch_ref: input.batchPath, ...input.options, ...runOf(b) }, { signal });
        const { result, replayedSteps, skippedStates } = await atVersion(deps, b, input.step, signal, train);
        if (b) await saveTrainerState(deps, b, result.version, signal);
        const recovery = { ...(replayedSteps > 0 ? { [REPLAYED_STEPS]: replayedSteps } : {}), ...(skippedStates > 0 ? { [SKIPPED_STATES]: skippedStates } : {}) };
        return Object.keys(recovery).length ? { ...result, metrics: { ...result.metrics, ...recovery } } : result;
      });
    },

    /** The weights at `version` where the inference servers load them; a restarted trainer is recovered first (replayedSteps > 0). */
    async exportWeights(input: { version: number; binding?: TrainerBinding }): Promise<{ path: string; version: number; replayedSteps?: number }> {
      return withHeartbeat(async (signal) => {
        const exported = () => deps.trainer.exportWeights({ version: input.version, ...runOf(input.binding) }, { signal });
        const { result, replayedSteps } = await atVersion(deps, input.binding, input.version, signal, exported);
        return replayedSteps > 0 ? { ...result, replayedSteps } : result;
      });
    },

    /**
     * pause -> update_weights -> resume on every inference server. With
     * partial rollout the pause aborts in-flight generations (the bridge
     * continues them from their partial tokens under the new weights);
     * without it, the pause drains them first. Every step is safe to repeat,
     * so a retry after a crash midway converges.
     *
     * A dead server does not stall the sync: a server marked down is skipped,
     * one whose connection fails now is marked down, and the rest are synced.
     * The new weights are then recorded for the run (weightsKey): every
     * generate request asks for that version at least, and a server that
     * comes back is brought to it before it serves (the prober, or the router
     * on a 409 version_behind).
     */
    async syncWeights(input: { path: string; version: number; partialRollout: boolean; runId?: string }) {
      return withHeartbeat(async (signal) => {
        const started = Date.now();
        const live = await answering(deps, [...deps.inference].filter(([url]) => !deps.pool.isDown(url)), signal);
        const paused = await onEachReachable(deps, live, (c) => c.pause({ mode: input.partialRollout ? 'abort' : 'wait' }, { signal }));
        const reached = paused.done.map(([server]) => server);
        let failures = paused.failures;
        try {
          failures = [...failures, ...(await onEachReachable(deps, failures.length ? [] : reached, (c) => c.updateWeights({ path: input.path, version: input.version }, { signal }))).failures];
        } finally {
          // Never leave the servers paused: a rejected update (a bad path) keeps serving the weights they had.
          failures = [...failures, ...(await onEachReachable(deps, reached, (c) => c.resume({ signal }))).failures];
        }
        if (failures.length) throw failures[0];
        if (input.runId !== undefined) await deps.weights.write(input.runId, { version: input.version, path: input.path });
        return { aborted: paused.done.reduce((n, [, p]) => n + p.aborted, 0), seconds: (Date.now() - started) / 1000 };
      });
    },

    /** Suspend: freeze (keep) or stop admitting generations on every inference server until resumeEngines. */
    async pauseEngines(input: { mode: 'keep' | 'wait' }) {
      return withHeartbeat(async (signal) => {
        const paused = await Promise.all([...deps.inference.values()].map((c) => c.pause({ mode: input.mode }, { signal })));
        return { frozen: paused.reduce((n, p) => n + p.frozen, 0) };
      });
    },

    async resumeEngines(): Promise<void> {
      await withHeartbeat((signal) => Promise.all([...deps.inference.values()].map((c) => c.resume({ signal }))));
    },

    /**
     * Adds one metrics record to the run's step log (metrics.jsonl) or validation log (validation.jsonl): in the run's
     * directory, or with a bucket store in the bucket (`recordsDir`, run-records.ts). Idempotent: a retry after the
     * write (the worker died before reporting it) finds the record of this run and step and adds nothing.
     */
    async appendMetrics(input: { runDir: string; recordsDir?: string; file?: RecordFile; record: RunRecord; tracking?: TrackingSpec; final?: boolean }): Promise<void> {
      const file = input.file ?? 'metrics.jsonl';
      const records = runRecords(input.recordsDir ?? input.runDir, deps.store);
      if (await records.has(file, input.record)) {
        observeRecord(file, input.record, { counters: false }); // written by a worker that died: this one's gauges, no counts
      } else {
        await records.add(file, input.record);
        observeRecord(file, input.record); // the worker's /metrics (monitoring/run-metrics.ts)
      }
      // Also on a retry after the write (the worker that wrote it died before its trackers got it); the trackers
      // take a record once per worker. Heartbeating: a tracker process starting (torch, wandb) may take a while.
      const tracking = input.tracking;
      if (tracking) await withHeartbeat(() => deps.trackers.record(input.record.run_id, input.runDir, tracking, input.file ?? 'metrics.jsonl', input.record, input.final ?? false));
    },

    /** A run that ends before its last record (rollflow cancel) closes its trackers here, as its last record would have. */
    async closeTracking(input: { runId: string }): Promise<void> {
      await deps.trackers.close(input.runId);
    },
  };
}
