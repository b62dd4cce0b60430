/**
 * What a run buffers and consumes (ROLL Flash's SampleBuffer, SkyRL's
 * consumed-UID set): the result a group reports, the batch a step takes, the
 * staleness bound with its stale policy, and the positions done for good.
 * RunState holds the buffer; the rules are here.
 */
import type { GroupRef } from '../core';
import type { EnvInfoSums } from './env-info';
import { IntervalSet, type Range } from './interval-set';
import type { AdmissionLimits } from './run-admission';

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

export const noEvents = (): StepEvents => ({ infraFailedSamples: 0, envReplays: 0, envRestarts: 0, unscoredSamples: 0 });

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

/**
 * The staleness bound: a buffered group dispatched at version v has
 * staleness n − v at the current version n (v: its baseVersion); above ⌈α⌉ the stale policy
 * decides: accept (keep it, train it, count it), drop (discard it, its
 * prompt done for this epoch) or restart (regenerate the prompt with the
 * current weights). Sorts the buffer, in its order, by what the policy does.
 */
export function applyStalePolicy(buffer: readonly GroupResult[], version: number, { maxStaleness, stalePolicy }: Pick<AdmissionLimits, 'maxStaleness' | 'stalePolicy'>): { keep: GroupResult[]; drop: GroupResult[]; restart: GroupResult[] } {
  const out = { keep: [] as GroupResult[], drop: [] as GroupResult[], restart: [] as GroupResult[] };
  for (const g of buffer) {
    if (version - baseVersion(g) <= maxStaleness || stalePolicy === 'accept') out.keep.push(g); else if (stalePolicy === 'drop') out.drop.push(g);
    else out.restart.push(g);
  }
  return out;
}

/** Positions done for good (trained, filtered or dropped), per epoch: never dispatched again, even after a resume. */
export class ConsumedPositions {
  private readonly epochs = new Map<number, IntervalSet>();

  has(ref: GroupRef): boolean {
    return this.epochs.get(ref.epoch)?.has(ref.position) ?? false;
  }

  add(ref: GroupRef): void {
    let set = this.epochs.get(ref.epoch);
    if (!set) this.epochs.set(ref.epoch, (set = new IntervalSet()));
    set.add(ref.position);
  }

  /** Per epoch, in the order epochs were first consumed: what RunSnapshot.consumed carries. */
  toJSON(): [epoch: number, ranges: Range[]][] {
    return [...this.epochs.entries()].map(([epoch, set]) => [epoch, set.toJSON()]);
  }

  static fromJSON(entries: readonly (readonly [number, Range[]])[]): ConsumedPositions {
    const c = new ConsumedPositions();
    for (const [epoch, ranges] of entries) c.epochs.set(epoch, IntervalSet.fromJSON(ranges));
    return c;
  }
}
