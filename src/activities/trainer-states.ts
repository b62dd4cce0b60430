/**
 * Where a run's trainer states are kept (TrainerBinding.stateDir), for recovery (trainer-recovery.ts): a directory,
 * the default, which the trainer writes and the worker lists, so both must see one disk; or, when the run's sample
 * store is a bucket, an s3://<bucket>/<prefix><run id>/trainer-state ref (RunPlan.bucketRunDir), which a trainer on
 * any host writes and reads (python-engines roles/trainer/store_states.py) and the worker lists in the bucket.
 *
 * Both hold one v<version> state per save, complete when it holds the trainer's meta file (written last: the rename
 * of a finished directory, or the last object of an upload), beside ORIGIN and RECORD. What differs: a bucket has no
 * rename, so a state recovery passes over as corrupt is removed there (its objects may be GBs, and a copy of each
 * is what a rename would cost), not moved aside; RECORD keeps why either way. And an upload cut short leaves objects
 * under v<n>/ without the meta: not a saved state, but present, so pruning removes it too.
 */
import { appendFileSync, existsSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isObjectRef } from '../core';
import { S3SampleStore, type SampleStore } from '../store';

/** The trainer's checkpoint meta file (api.py CHECKPOINT_META): a state holding it is complete. */
export const COMPLETE_MARKER = 'rollflow_checkpoint.json';
/** Written by initTrainer beside the states: the run began at the trainer's launch weights (its version 0). */
export const ORIGIN = 'origin-launch-weights';
/** One line per state recovery passed over: {run_id, version, skipped, reason}. */
export const RECORD = 'recovery.jsonl';

const VERSION = /^v(\d+)$/;

export interface TrainerStates {
  /** The directory or the ref, for messages. */
  readonly where: string;
  /** What the trainer's /save and /load are given for the state of `version`. */
  path(version: number): string;
  /** Versions with a complete state, ascending. */
  saved(): Promise<number[]>;
  /** Versions with anything stored (complete or not), ascending: what pruning removes. */
  present(): Promise<number[]>;
  remove(version: number): Promise<void>;
  /** Takes a corrupt state out of recovery's way (a later save may write its version again). */
  setAside(version: number): Promise<void>;
  record(line: Record<string, unknown>): Promise<void>;
  markOrigin(runId: string): Promise<void>;
  hasOrigin(): Promise<boolean>;
}

/** The states at `stateDir`; a bucket's through `store`'s client when the run's store is that bucket. */
export const trainerStates = (stateDir: string, store?: SampleStore): TrainerStates =>
  isObjectRef(stateDir) ? new BucketStates(stateDir, store) : new DirectoryStates(stateDir);

class DirectoryStates implements TrainerStates {
  constructor(readonly where: string) {}

  path(version: number): string {
    return path.join(this.where, `v${version}`);
  }

  async saved(): Promise<number[]> {
    return (await this.present()).filter((v) => existsSync(path.join(this.path(v), COMPLETE_MARKER)));
  }

  async present(): Promise<number[]> {
    if (!existsSync(this.where)) return [];
    return versionsOf(readdirSync(this.where));
  }

  async remove(version: number): Promise<void> {
    rmSync(this.path(version), { recursive: true, force: true });
  }

  /** Moved aside to v<n>.corrupt, for inspection (a previous one of that name goes). */
  async setAside(version: number): Promise<void> {
    const dir = this.path(version);
    rmSync(`${dir}.corrupt`, { recursive: true, force: true });
    renameSync(dir, `${dir}.corrupt`);
  }

  async record(line: Record<string, unknown>): Promise<void> {
    appendFileSync(path.join(this.where, RECORD), `${JSON.stringify(line)}\n`);
  }

  async markOrigin(runId: string): Promise<void> {
    writeFileSync(path.join(this.where, ORIGIN), `${runId}\n`);
  }

  async hasOrigin(): Promise<boolean> {
    return existsSync(path.join(this.where, ORIGIN));
  }
}

/** The states under a ref, each object written and read as every object of the store (src/store/s3.ts). */
class BucketStates implements TrainerStates {
  readonly where: string;
  private readonly objects: S3SampleStore;

  constructor(ref: string, sameBucket?: SampleStore) {
    this.where = ref.replace(/\/+$/, '');
    // One client per worker: the run's store's, when the states are in its bucket (they are, by RunPlan.bucketRunDir).
    this.objects = S3SampleStore.at(this.where, sameBucket);
  }

  path(version: number): string {
    return `${this.where}/v${version}`;
  }

  async saved(): Promise<number[]> {
    return this.versions(await this.objects.keysUnder(), (v, names) => names.has(`v${v}/${COMPLETE_MARKER}`));
  }

  async present(): Promise<number[]> {
    return this.versions(await this.objects.keysUnder(), () => true);
  }

  /** The meta first: from then on the state is not complete, whatever of it a failure leaves. */
  async remove(version: number): Promise<void> {
    const keys = await this.objects.keysUnder(`v${version}`);
    for (const key of [...keys.filter((k) => k === COMPLETE_MARKER), ...keys.filter((k) => k !== COMPLETE_MARKER)]) await this.objects.delete(`v${version}/${key}`);
  }

  async setAside(version: number): Promise<void> {
    await this.remove(version);
  }

  /**
   * Read, append, write back: the whole object replaced at once. Two recoveries recording at the same moment could
   * lose a line (a file's append cannot); recovery never reads RECORD, only the chaos checks do, and they refuse a
   * bucket store.
   */
  async record(line: Record<string, unknown>): Promise<void> {
    const lines = (await this.objects.has(RECORD)) ? await this.objects.getLines<Record<string, unknown>>(RECORD) : [];
    await this.objects.putLines(RECORD, [...lines, line]);
  }

  async markOrigin(runId: string): Promise<void> {
    await this.objects.put(ORIGIN, { run_id: runId });
  }

  async hasOrigin(): Promise<boolean> {
    return this.objects.has(ORIGIN);
  }

  private versions(keys: string[], keep: (version: number, names: Set<string>) => boolean): number[] {
    const names = new Set(keys);
    return versionsOf(keys.map((k) => k.split('/')[0]!)).filter((v) => keep(v, names));
  }
}

/** The versions of the v<n> names among `names`, ascending, each once. */
const versionsOf = (names: string[]): number[] => [...new Set(names.flatMap((n) => (VERSION.test(n) ? [Number(n.slice(1))] : [])))].sort((a, b) => a - b);
