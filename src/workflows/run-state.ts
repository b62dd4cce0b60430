/**
 * The run's scheduling state: ROLL Flash's AsyncController and SampleBuffer,
 * SkyRL's consumed-UID set, as one plain class. The `run` workflow is a thin
 * loop over it; everything here is deterministic and tested without Temporal.
 *
 * The async ratio α (admission control) is applied in canDispatch(); the
 * staleness bound and the stale policy in applyStalePolicy(). Both are
 * stated there, once.
 */
import type { EnvInfoSums } from './env-info';
import { groupUid, type GroupRef } from '../core';
import { IntervalSet, type Range } from './interval-set';

export type { GroupRef };

export type StalePolicy = 'accept' | 'drop' | 'restart';

export interface AdmissionLimits {
  /** B: samples per training step. */
  samplesPerStep: number;
  /** G: samples per group; B is a multiple of G. */
  groupSize: number;
  /** The admission cap, floor((1 + α)·B) plus the spare groups' samples (Derived.max_samples_in_system; see canDispatch). */
  maxSamplesInSystem: number;
  /** ⌈α⌉: the dispatch staleness a sample may have at consumption before the stale policy applies. */
  maxStaleness: number;
  stalePolicy: StalePolicy;
}

/** The one signal a group workflow sends when its samples are done (small: references and numbers). */
export interface GroupResult extends GroupRef {
  startVersion: number;
  /** Highest weight version that produced any of its tokens. */
  endVersion: number;
  /**
   * Lowest weight version that produced any of its tokens. Never below startVersion when every server serves
   * the run's weights; below it when one served older weights (a restarted server before its catch-up), and
   * then the staleness counts from it. Absent in results recorded before it existed: startVersion.
   */
  oldestVersion?: number;
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
  /** With `error`: the infrastructure failed (workflows/failure.ts isInfraFailure), not the model or the config. */
  infra?: boolean;
  /** With `error`: a verifier could not score a response (an LLM judge gave no readable grade); never a made-up reward. */
  unscored?: true;
  /** Env sessions its trajectories rebuilt by replay, and episodes they started over (on_env_loss); absent = 0. */
  envReplays?: number;
  envRestarts?: number;
  /** Its samples' env info (env-info.ts): per key, the sum and how many reported it; absent when none did. */
  envInfo?: EnvInfoSums;
}

/** What happened between two batches, reported in the later one's step record (rollout/infra_failed, rollout/env_*). */
export interface StepEvents {
  /** Samples of groups that failed for an infrastructure reason. */
  infraFailedSamples: number;
  envReplays: number;
  envRestarts: number;
  /** Samples of groups failed because a response could not be scored (GroupResult.unscored). */
  unscoredSamples: number;
}

/** The version a group's staleness counts from: its dispatch, or its oldest token if a server served it older weights. */
export const baseVersion = (g: GroupResult): number => Math.min(g.startVersion, g.oldestVersion ?? g.startVersion);

const noEvents = (): StepEvents => ({ infraFailedSamples: 0, envReplays: 0, envRestarts: 0, unscoredSamples: 0 });

export interface Batch {
  step: number;
  /** The version the batch trains (it produces version + 1). */
  version: number;
  groups: GroupResult[];
  /**
   * Dispatch staleness of the batch's samples: the version trained minus the
   * version that was served when the sample's group was dispatched, or minus
   * the oldest version of its tokens if that is older (baseVersion). The
   * staleness bound ⌈α⌉ applies to this one. (The trainer reports another:
   * the version trained minus the oldest version that generated a token of
   * the sample, train/staleness/oldest_token_*; with partial rollout a sample
   * dispatched at v may have no token of v left, so the two differ.)
   */
  staleness: { mean: number; max: number };
  /** Group reports since the previous batch was taken. */
  events: StepEvents;
}

/** What one batch holds, summed over its groups: the step's rollout metrics and the run totals take it. */
export interface BatchSummary {
  samples: number;
  tokens: number;
  rewardMean: number;
  /** Samples whose tokens span more than one version, and the most versions one sample spans. */
  partialSamples: number;
  maxSpan: number;
}

export function summarizeBatch(batch: Batch): BatchSummary {
  const sum = (f: (g: GroupResult) => number) => batch.groups.reduce((n, g) => n + f(g), 0);
  const samples = sum((g) => g.samples);
  return {
    samples,
    tokens: sum((g) => g.tokens),
    rewardMean: sum((g) => g.rewardMean * g.samples) / samples,
    partialSamples: sum((g) => g.partialSamples),
    maxSpan: Math.max(...batch.groups.map((g) => g.maxSpan)),
  };
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
  totals: RunTotals;
  /** Absent in snapshots taken before step events existed. */
  events?: StepEvents;
}

/** The run's totals, all in one record: carried across continue-as-new and reported by the status query. */
export interface RunTotals {
  dispatchedGroups: number;
  /** Samples taken into a batch (counted when the batch is taken). */
  consumedSamples: number;
  /** Samples whose train step completed: the denominator of the staleness and partial means below. */
  trainedSamples: number;
  filteredGroups: number;
  droppedSamples: number;
  restartedSamples: number;
  staleAcceptedSamples: number;
  duplicateResults: number;
  /** Groups that failed for another reason than the infrastructure (a bad config, an env or tokenization error). */
  failedGroups: number;
  /** Groups that failed because the infrastructure did (engine or env down past retries, env lost with drop, a timeout), and their samples. */
  infraFailedGroups: number;
  infraFailedSamples: number;
  /** Samples of failed groups (among failedGroups) that had a response no verifier could score (an LLM judge's unreadable grade). */
  unscoredSamples: number;
  /** Env sessions rebuilt by replay, and episodes started over, in the groups reported (on_env_loss). */
  envReplays: number;
  envRestarts: number;
  /** Dispatch staleness (Batch.staleness) summed over trained samples, and its maximum. */
  stalenessSum: number;
  stalenessMax: number;
  partialSamples: number;
  maxPartialSpan: number;
  /** The reward mean of the batch the latest step trained. */
  lastRewardMean: number;
  /** Most samples ever buffered, training or running right after a dispatch: admission control's bound, as recorded. */
  peakSamplesInSystem: number;
}

export const emptyTotals = (): RunTotals => ({
  dispatchedGroups: 0, consumedSamples: 0, trainedSamples: 0, filteredGroups: 0, droppedSamples: 0, restartedSamples: 0, staleAcceptedSamples: 0,
  duplicateResults: 0, failedGroups: 0, infraFailedGroups: 0, infraFailedSamples: 0, unscoredSamples: 0, envReplays: 0, envRestarts: 0, stalenessSum: 0, stalenessMax: 0, partialSamples: 0, maxPartialSpan: 0, lastRewardMean: 0, peakSamplesInSystem: 0,
});

/** Groups that failed, whatever the cause (the benches' failed-group counts). */
export const allFailedGroups = (t: Pick<RunTotals, 'failedGroups' | 'infraFailedGroups'>): number => t.failedGroups + (t.infraFailedGroups ?? 0);

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

  /**
   * Admission control (the async ratio α): a group of G samples may start only while
   *     accepted_unconsumed + running + G <= floor((1 + α)·B) + spare groups·G
   * where accepted_unconsumed counts buffered samples and the batch in
   * training until its step completes (as in AReaL's cumulative rule). So at
   * most (1 + α)·B samples, plus the spares, are ever buffered, in flight or
   * in training. α = 0 is synchronous on-policy training: nothing new starts
   * while a batch trains. The spare groups (redundant env groups,
   * max_additional_running_prompts) run beside the batch and are not trained
   * unless they finish first. The cap is computed once, in
   * src/configs/derive.ts (max_samples_in_system).
   */
  canDispatch(): boolean {
    return this.samplesInSystem + this.limits.groupSize <= this.limits.maxSamplesInSystem;
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
        this.totals.duplicateResults++;
        return 'duplicate';
      }
      return 'unknown';
    }
    this.inFlight.delete(uid);
    this.countEnvEvents(result);
    if (result.error !== undefined) {
      this.markDone(result); // skipped for this epoch, like a filtered group; its capacity is free again
      if (result.infra) {
        this.totals.infraFailedGroups++;
        this.totals.infraFailedSamples += result.samples;
        this.events.infraFailedSamples += result.samples;
      } else this.totals.failedGroups++;
      if (result.unscored) {
        this.totals.unscoredSamples += result.samples;
        this.events.unscoredSamples += result.samples;
      }
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

  private countEnvEvents(result: GroupResult): void {
    const replays = result.envReplays ?? 0;
    const restarts = result.envRestarts ?? 0;
    this.totals.envReplays += replays;
    this.totals.envRestarts += restarts;
    this.events.envReplays += replays;
    this.events.envRestarts += restarts;
  }

  /**
   * The failing-groups stop (max_failed_group_ratio): at least 4 groups
   * failed and they are `ratio` of those dispatched. Infrastructure failures
   * count too: a group fails for the infrastructure only after its calls
   * waited out their retries (an engine or env server down for minutes) or
   * the operator chose on_env_loss: drop, and a run that keeps losing groups
   * to a dead server would otherwise skip prompt after prompt without
   * training. The message keeps the two kinds apart.
   */
  failingBadly(ratio: number): boolean {
    const failed = allFailedGroups(this.totals);
    return failed >= 4 && failed >= ratio * this.totals.dispatchedGroups;
  }

  failingSummary(): string {
    const { failedGroups, infraFailedGroups, dispatchedGroups } = this.totals;
    return `${allFailedGroups(this.totals)} of ${dispatchedGroups} groups failed (${infraFailedGroups} for infrastructure reasons, ${failedGroups} for others)`;
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

  /**
   * The staleness bound: a buffered group dispatched at version v has
   * staleness n − v at the current version n (v: its baseVersion); above ⌈α⌉ the stale policy
   * decides: accept (keep it, train it, count it), drop (discard it, its
   * prompt done for this epoch) or restart (regenerate the prompt with the
   * current weights).
   */
  private applyStalePolicy(): void {
    const { maxStaleness, stalePolicy } = this.limits;
    const keep: GroupResult[] = [];
    for (const g of this.buffer) {
      if (this.version - baseVersion(g) <= maxStaleness || stalePolicy === 'accept') keep.push(g); else if (stalePolicy === 'drop') {
        this.markDone(g);
        this.totals.droppedSamples += g.samples;
      } else {
        this.retry.push({ epoch: g.epoch, position: g.position });
        this.totals.restartedSamples += g.samples;
      }
    }
    this.buffer = keep;
  }

  /** The train step of `batch` finished: the served version moves to batch.version + 1, and the batch joins the totals. */
  onStepDone(batch: Batch): void {
    const b = summarizeBatch(batch);
    const t = this.totals;
    t.trainedSamples += b.samples;
    t.stalenessSum += batch.staleness.mean * b.samples;
    t.stalenessMax = Math.max(t.stalenessMax, batch.staleness.max);
    t.partialSamples += b.partialSamples;
    t.maxPartialSpan = Math.max(t.maxPartialSpan, b.maxSpan);
    t.lastRewardMean = b.rewardMean;
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
      /** Dispatch staleness over the samples trained so far. */
      staleness: { mean: t.trainedSamples ? t.stalenessSum / t.trainedSamples : 0, max: t.stalenessMax },
      partial: { ratio: t.trainedSamples ? t.partialSamples / t.trainedSamples : 0, maxSpan: t.maxPartialSpan },
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
      consumed: [...this.consumed.entries()].map(([epoch, set]) => [epoch, set.toJSON()]),
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
    for (const [epoch, ranges] of s.consumed) state.consumed.set(epoch, IntervalSet.fromJSON(ranges));
    Object.assign(state.totals, legacy, s.totals);
    state.events = { ...noEvents(), ...s.events };
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
