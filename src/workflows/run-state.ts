/**
 * The run's scheduling state: ROLL Flash's AsyncController and SampleBuffer,
 * SkyRL's consumed-UID set, as one plain class. The `run` workflow is a thin
 * loop over it; everything here is deterministic and tested without Temporal.
 *
 * Async ratio α (admission control): a group of G samples may start only while
 *     accepted_unconsumed + running + G <= floor((1 + α)·B)
 * where a batch stays "unconsumed" until its training step completes (as in
 * AReaL's cumulative rule), so at most (1 + α)·B samples are ever buffered,
 * in flight or in training. α = 0 is synchronous on-policy training: nothing
 * new starts while a batch trains, so every sample of batch n is started
 * (and, without partial rollout, generated) by version n. At consumption a sample started at
 * version v has staleness n − v; above ⌈α⌉ the stale policy decides: accept
 * (train it, count it), drop (discard it), restart (regenerate the prompt).
 */
import { IntervalSet, type Range } from './interval-set';

export type StalePolicy = 'accept' | 'drop' | 'restart';

export interface AdmissionLimits {
  /** B: samples per training step. */
  samplesPerStep: number;
  /** G: samples per group; B is a multiple of G. */
  groupSize: number;
  /** floor((1 + α)·B). */
  maxSamplesInSystem: number;
  /** ⌈α⌉. */
  maxStaleness: number;
  stalePolicy: StalePolicy;
}

/** Where a group's prompt sits: its position in the epoch's seeded order. */
export interface GroupRef {
  epoch: number;
  position: number;
}

export const groupUid = (g: GroupRef) => `e${g.epoch}-p${g.position}`;

/** The one signal a group workflow sends when its samples are done (small: references and numbers). */
export interface GroupResult extends GroupRef {
  startVersion: number;
  /** Highest weight version that produced any of its tokens. */
  endVersion: number;
  samples: number;
  /** False when the group filter rejected it (e.g. zero reward variance). */
  accepted: boolean;
  rewardMean: number;
  tokens: number;
  /** Samples whose tokens span more than one version, and the most versions one sample spans. */
  partialSamples: number;
  maxSpan: number;
  /** Sample store keys of the group's samples. */
  storeKeys: string[];
  /** Set when the group could not produce its samples (a trajectory failed for good); such a group is not trained. */
  error?: string;
}

export interface Batch {
  step: number;
  /** The version the batch trains (it produces version + 1). */
  version: number;
  groups: GroupResult[];
  staleness: { mean: number; max: number };
}

/** buffered: waits for a batch; stale: arrived over the staleness bound and was dropped or queued for restart. */
export type ResultOutcome = 'buffered' | 'stale' | 'filtered' | 'failed' | 'duplicate' | 'unknown';

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
  counters: RunCounters;
}

export interface RunCounters {
  dispatchedGroups: number;
  consumedSamples: number;
  filteredGroups: number;
  droppedSamples: number;
  restartedSamples: number;
  staleAcceptedSamples: number;
  duplicateResults: number;
  failedGroups: number;
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
  private consumed = new Map<number, IntervalSet>();
  readonly counters: RunCounters = { dispatchedGroups: 0, consumedSamples: 0, filteredGroups: 0, droppedSamples: 0, restartedSamples: 0, staleAcceptedSamples: 0, duplicateResults: 0, failedGroups: 0 };

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

  /** Admission control: may another group start now? */
  canDispatch(): boolean {
    return this.samplesInSystem + this.limits.groupSize <= this.limits.maxSamplesInSystem;
  }

  /** The next prompt to start (restarts first, then the epoch order, skipping consumed positions), marked in flight. */
  dispatch(): GroupRef {
    if (!this.canDispatch()) throw new Error('admission control: no capacity to dispatch');
    const ref = this.retry.shift() ?? this.advanceCursor();
    this.inFlight.set(groupUid(ref), { ...ref, startVersion: this.version });
    this.counters.dispatchedGroups++;
    return ref;
  }

  private advanceCursor(): GroupRef {
    for (;;) {
      const ref = { ...this.cursor };
      this.cursor = ref.position + 1 < this.datasetSize ? { epoch: ref.epoch, position: ref.position + 1 } : { epoch: ref.epoch + 1, position: 0 };
      if (!this.isDone(ref) && !this.inFlight.has(groupUid(ref))) return ref;
    }
  }

  private isDone(ref: GroupRef): boolean {
    return this.consumed.get(ref.epoch)?.has(ref.position) ?? false;
  }

  private markDone(ref: GroupRef): void {
    let set = this.consumed.get(ref.epoch);
    if (!set) this.consumed.set(ref.epoch, (set = new IntervalSet()));
    set.add(ref.position);
  }

  /** A group finished. Idempotent: a result for a group not in flight (a redelivered signal) changes nothing. */
  onGroupResult(result: GroupResult): ResultOutcome {
    const uid = groupUid(result);
    if (!this.inFlight.has(uid)) {
      if (this.isDone(result) || this.buffer.some((g) => groupUid(g) === uid)) {
        this.counters.duplicateResults++;
        return 'duplicate';
      }
      return 'unknown';
    }
    this.inFlight.delete(uid);
    if (result.error !== undefined) {
      this.markDone(result); // skipped for this epoch, like a filtered group; its capacity is free again
      this.counters.failedGroups++;
      return 'failed';
    }
    if (!result.accepted) {
      this.markDone(result);
      this.counters.filteredGroups++;
      return 'filtered';
    }
    this.buffer.push(result);
    this.applyStalePolicy(); // it may arrive already too stale
    return this.buffer.includes(result) ? 'buffered' : 'stale';
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
    const staleness = groups.map((g) => this.version - g.startVersion);
    this.counters.staleAcceptedSamples += groups.filter((g) => this.version - g.startVersion > this.limits.maxStaleness).length * this.limits.groupSize;
    for (const g of groups) this.markDone(g);
    this.trainingSamples = groups.length * this.limits.groupSize;
    this.counters.consumedSamples += this.trainingSamples;
    return {
      step: this.step,
      version: this.version,
      groups,
      staleness: { mean: staleness.reduce((a, b) => a + b, 0) / staleness.length, max: Math.max(...staleness) },
    };
  }

  private applyStalePolicy(): void {
    const { maxStaleness, stalePolicy } = this.limits;
    const keep: GroupResult[] = [];
    for (const g of this.buffer) {
      if (this.version - g.startVersion <= maxStaleness || stalePolicy === 'accept') keep.push(g); else if (stalePolicy === 'drop') {
        this.markDone(g);
        this.counters.droppedSamples += g.samples;
      } else {
        this.retry.push({ epoch: g.epoch, position: g.position });
        this.counters.restartedSamples += g.samples;
      }
    }
    this.buffer = keep;
  }

  /** The train step of `batch` finished: the served version moves to batch.version + 1. */
  onStepDone(batch: Batch): void {
    this.trainingSamples = 0;
    this.step = batch.step + 1;
    this.version = batch.version + 1;
    // Staleness grows only here; stale groups must leave the buffer now, or they would hold admission capacity.
    this.applyStalePolicy();
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
      consumed: [...this.consumed.entries()].map(([epoch, set]) => [epoch, set.toJSON()]),
      counters: { ...this.counters },
    };
  }

  static restore(s: RunSnapshot): RunState {
    const state = new RunState(s.limits, s.datasetSize);
    state.version = s.version;
    state.step = s.step;
    state.cursor = { ...s.cursor };
    for (const g of s.inFlight) state.inFlight.set(groupUid(g), { ...g });
    state.buffer = [...s.buffer];
    state.retry = [...s.retry];
    state.trainingSamples = s.trainingSamples;
    for (const [epoch, ranges] of s.consumed) state.consumed.set(epoch, IntervalSet.fromJSON(ranges));
    Object.assign(state.counters, s.counters);
    return state;
  }

  /** A fresh run that resumes from a checkpoint: keeps the consumed set, version and step; everything in flight is regenerated. */
  static resumeFrom(checkpoint: { version: number; step: number; consumed: RunSnapshot['consumed'] }, limits: AdmissionLimits, datasetSize: number): RunState {
    const state = new RunState(limits, datasetSize);
    state.version = checkpoint.version;
    state.step = checkpoint.step;
    for (const [epoch, ranges] of checkpoint.consumed) state.consumed.set(epoch, IntervalSet.fromJSON(ranges));
    return state;
  }
}
