/**
 * The run's scheduling state: ROLL Flash's AsyncController and SampleBuffer,
 * SkyRL's consumed-UID set, as one plain class. The `run` workflow is a thin
 * loop over it; everything here is deterministic and tested without Temporal.
 *
 * Its rules live beside it, each stated once: admission control (the async
 * ratio α) in run-admission.ts, the staleness bound and the stale policy in
 * run-buffer.ts, the totals and the failing-groups stop in run-totals.ts.
 */
import { groupUid, type GroupRef } from '../core';
import { admits, nextPosition, type AdmissionLimits } from './run-admission';
import { applyStalePolicy, baseVersion, ConsumedPositions, noEvents, type Batch, type GroupResult, type ResultOutcome, type StepEvents } from './run-buffer';
import { countEnvEvents, countFailedGroup, countTrainedBatch, emptyTotals, failingBadly, failingSummary, trainedMeans, type RunTotals } from './run-totals';
import type { Range } from './interval-set';

// RunState's vocabulary, from where each is defined: importers of run-state.ts need look nowhere else.
export type { GroupRef };
export type { AdmissionLimits, StalePolicy } from './run-admission';
export { baseVersion, summarizeBatch, type Batch, type BatchSummary, type GroupResult, type ResultOutcome, type StepEvents } from './run-buffer';
export { allFailedGroups, emptyTotals, type RunTotals } from './run-totals';

export interface RunSnapshot {
  limits: AdmissionLimits;
  datasetSize: number;
  version: number;
  step: number;
  cursor: GroupRef;
  inFlight: (GroupRef & { startVersion: number })[];
  buffer: GroupResult[];
  retry: GroupRef[];
  trainingSamples: number;
  consumed: [epoch: number, ranges: Range[]][];
  totals: RunTotals;
  /** Absent in snapshots taken before step events existed. */
  events?: StepEvents;
}

export class RunState {
  version = 0;
  step = 0;
  private cursor: GroupRef = { epoch: 0, position: 0 };
  private inFlight = new Map<string, GroupRef & { startVersion: number }>();
  private buffer: GroupResult[] = [];
  private retry: GroupRef[] = [];
  /** Samples of the batch whose train step is running; they count against admission until it completes. */
  private trainingSamples = 0;
  /** Positions done for good (trained, filtered or dropped), per epoch: never dispatched again, even after a resume. */
  private consumed = new ConsumedPositions();
  readonly totals: RunTotals = emptyTotals();
  private events: StepEvents = noEvents();

  constructor(
    readonly limits: AdmissionLimits,
    readonly datasetSize: number,
  ) {
    if (limits.samplesPerStep % limits.groupSize !== 0) throw new Error(`B = ${limits.samplesPerStep} is not a multiple of G = ${limits.groupSize}`);
    if (limits.maxSamplesInSystem < limits.samplesPerStep) throw new Error('maxSamplesInSystem must be at least B');
    if (datasetSize <= 0) throw new Error('the dataset is empty');
  }

  get runningSamples(): number {
    return this.inFlight.size * this.limits.groupSize;
  }

  get bufferedSamples(): number {
    return this.buffer.reduce((n, g) => n + g.samples, 0);
  }

  /** accepted_unconsumed (buffered or training) + running: what admission control bounds. */
  get samplesInSystem(): number {
    return this.bufferedSamples + this.trainingSamples + this.runningSamples;
  }

  /** Groups started and not yet reported. */
  get inFlightGroups(): GroupRef[] {
    return [...this.inFlight.values()].map(({ epoch, position }) => ({ epoch, position }));
  }

  /** True while a taken batch waits for onStepDone. */
  get training(): boolean {
    return this.trainingSamples > 0;
  }

  /** Admission control (the async ratio α, run-admission.ts): a group of G samples may start now. */
  canDispatch(): boolean {
    return admits(this.samplesInSystem, this.limits);
  }

  /** The next prompt to start (restarts first, then the epoch order, skipping consumed positions), marked in flight. */
  dispatch(): GroupRef {
    if (!this.canDispatch()) throw new Error('admission control: no capacity to dispatch');
    const ref = this.retry.shift() ?? this.advanceCursor();
    this.inFlight.set(groupUid(ref), { ...ref, startVersion: this.version });
    this.totals.dispatchedGroups++;
    this.totals.peakSamplesInSystem = Math.max(this.totals.peakSamplesInSystem, this.samplesInSystem);
    return ref;
  }

  private advanceCursor(): GroupRef {
    for (;;) {
      const ref = { ...this.cursor };
      this.cursor = nextPosition(ref, this.datasetSize);
      if (!this.isDone(ref) && !this.inFlight.has(groupUid(ref))) return ref;
    }
  }

  private isDone(ref: GroupRef): boolean {
    return this.consumed.has(ref);
  }

  private markDone(ref: GroupRef): void {
    this.consumed.add(ref);
  }

  /** A group finished. Idempotent: a result for a group not in flight (a redelivered signal) changes nothing. */
  onGroupResult(result: GroupResult): ResultOutcome {
    const uid = groupUid(result);
    if (!this.inFlight.has(uid)) {
      if (this.isDone(result) || this.buffer.some((g) => groupUid(g) === uid)) {
        this.totals.duplicateResults++;
        return 'duplicate';
      }
      return 'unknown';
    }
    this.inFlight.delete(uid);
    countEnvEvents(this.totals, this.events, result);
    if (result.error !== undefined) {
      this.markDone(result); // skipped for this epoch, like a filtered group; its capacity is free again
      countFailedGroup(this.totals, this.events, result);
      return 'failed';
    }
    if (!result.accepted) {
      this.markDone(result);
      this.totals.filteredGroups++;
      return 'filtered';
    }
    this.buffer.push(result);
    this.applyStalePolicy(); // it may arrive already too stale
    return this.buffer.includes(result) ? 'buffered' : 'stale';
  }

  /** The failing-groups stop (max_failed_group_ratio, run-totals.ts). */
  failingBadly(ratio: number): boolean {
    return failingBadly(this.totals, ratio);
  }

  failingSummary(): string {
    return failingSummary(this.totals);
  }

  /** A full batch is buffered and the previous one is done training: the run may take it. */
  batchReady(): boolean {
    return !this.training && this.buffer.length >= this.limits.samplesPerStep / this.limits.groupSize;
  }

  /**
   * Takes the oldest B samples as the next batch, or returns undefined when
   * fewer are buffered. Taken groups count as consumed. (The buffer never
   * holds a group over the staleness bound unless the policy is accept: the
   * policy runs whenever the version advances or a group arrives.)
   */
  takeBatch(): Batch | undefined {
    if (this.training) throw new Error('takeBatch: the previous batch is still training');
    const groupsNeeded = this.limits.samplesPerStep / this.limits.groupSize;
    if (this.buffer.length < groupsNeeded) return undefined;
    const groups = this.buffer.splice(0, groupsNeeded);
    const staleness = groups.map((g) => this.version - baseVersion(g));
    this.totals.staleAcceptedSamples += staleness.filter((s) => s > this.limits.maxStaleness).length * this.limits.groupSize;
    for (const g of groups) this.markDone(g);
    this.trainingSamples = groups.length * this.limits.groupSize;
    this.totals.consumedSamples += this.trainingSamples;
    const events = this.events;
    this.events = noEvents();
    return {
      step: this.step,
      version: this.version,
      groups,
      staleness: { mean: staleness.reduce((a, b) => a + b, 0) / staleness.length, max: Math.max(...staleness) },
      events,
    };
  }

  /** The staleness bound and the stale policy (run-buffer.ts), applied to the buffer. */
  private applyStalePolicy(): void {
    const { keep, drop, restart } = applyStalePolicy(this.buffer, this.version, this.limits);
    for (const g of drop) {
      this.markDone(g);
      this.totals.droppedSamples += g.samples;
    }
    for (const g of restart) {
      this.retry.push({ epoch: g.epoch, position: g.position });
      this.totals.restartedSamples += g.samples;
    }
    this.buffer = keep;
  }

  /** The train step of `batch` finished: the served version moves to batch.version + 1, and the batch joins the totals. */
  onStepDone(batch: Batch): void {
    countTrainedBatch(this.totals, batch);
    this.trainingSamples = 0;
    this.step = batch.step + 1;
    this.version = batch.version + 1;
    // Staleness grows only here; stale groups must leave the buffer now, or they would hold admission capacity.
    this.applyStalePolicy();
  }

  /** What the status query shows of the scheduling state. */
  view() {
    const t = this.totals;
    return {
      step: this.step,
      version: this.version,
      buffered: this.bufferedSamples,
      running: this.runningSamples,
      training: this.training,
      samplesInSystem: this.samplesInSystem,
      maxSamplesInSystem: this.limits.maxSamplesInSystem,
      totals: { ...t },
      /** Dispatch staleness and partial rollout over the samples trained so far. */
      ...trainedMeans(t),
    };
  }

  /** Everything needed to continue (continue-as-new input, checkpoint manifest); plain JSON. */
  snapshot(): RunSnapshot {
    return {
      limits: this.limits,
      datasetSize: this.datasetSize,
      version: this.version,
      step: this.step,
      cursor: { ...this.cursor },
      inFlight: [...this.inFlight.values()],
      buffer: this.buffer,
      retry: this.retry,
      trainingSamples: this.trainingSamples,
      consumed: this.consumed.toJSON(),
      totals: { ...this.totals },
      events: { ...this.events },
    };
  }

  /** `legacy`: totals a snapshot taken before RunTotals kept apart (its `counters`, the run input's `stats`). */
  static restore(s: RunSnapshot, legacy?: Partial<RunTotals>): RunState {
    const state = new RunState(s.limits, s.datasetSize);
    state.version = s.version;
    state.step = s.step;
    state.cursor = { ...s.cursor };
    for (const g of s.inFlight) state.inFlight.set(groupUid(g), { ...g });
    state.buffer = [...s.buffer];
    state.retry = [...s.retry];
    state.trainingSamples = s.trainingSamples;
    state.consumed = ConsumedPositions.fromJSON(s.consumed);
    Object.assign(state.totals, legacy, s.totals);
    state.events = { ...noEvents(), ...s.events };
    return state;
  }

  /** A fresh run that resumes from a checkpoint: keeps the consumed set, version and step; everything in flight is regenerated. */
  static resumeFrom(checkpoint: { version: number; step: number; consumed: RunSnapshot['consumed'] }, limits: AdmissionLimits, datasetSize: number): RunState {
    const state = new RunState(limits, datasetSize);
    state.version = checkpoint.version;
    state.step = checkpoint.step;
    state.consumed = ConsumedPositions.fromJSON(checkpoint.consumed);
    return state;
  }
}
