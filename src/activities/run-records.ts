/**
 * Where a run's records go (its step log, metrics.jsonl, and its validation log, validation.jsonl): the run's
 * directory, the default, as JSON lines; or, when the run's store is a bucket (RunPlan.bucketRunDir), the bucket,
 * one object per record, <run>/metrics/step-<n>.json, so the worker that writes the next one may be on any host. A
 * put is whole or absent and needs no read-modify-write, so a late write by a worker cut off from the run (its
 * call retried elsewhere meanwhile) can only write the same record again, never drop another.
 */
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { isObjectRef, pad6 } from '../core';
import { appendFileDurable, S3SampleStore, type SampleStore } from '../store';

export type RecordFile = 'metrics.jsonl' | 'validation.jsonl';
export type RunRecord = { run_id: string; step: number } & Record<string, unknown>;

export interface RunRecords {
  /** The record of this run and step is there already (written by a worker that died before it reported). */
  has(file: RecordFile, record: RunRecord): Promise<boolean>;
  add(file: RecordFile, record: RunRecord): Promise<void>;
  /** Every record of `file`, in step order for the bucket, as written for a directory. */
  read(file: RecordFile): Promise<RunRecord[]>;
}

/** The records at `where`: a directory, or an s3:// ref through `store`'s client when it is that bucket. */
export const runRecords = (where: string, store?: SampleStore): RunRecords => (isObjectRef(where) ? new BucketRecords(where, store) : new DirectoryRecords(where));

class DirectoryRecords implements RunRecords {
  constructor(private readonly dir: string) {}

  async has(file: RecordFile, record: RunRecord): Promise<boolean> {
    const written = await readFile(path.join(this.dir, file), 'utf8').catch(() => '');
    const key = `{"run_id":${JSON.stringify(record.run_id)},"step":${record.step},`;
    return written.split('\n').some((line) => line.startsWith(key));
  }

  async add(file: RecordFile, record: RunRecord): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const { run_id, step, ...rest } = record; // run_id and step lead each line: the key `has` looks for
    await appendFileDurable(path.join(this.dir, file), `${JSON.stringify({ run_id, step, ...rest })}\n`);
  }

  async read(file: RecordFile): Promise<RunRecord[]> {
    const text = await readFile(path.join(this.dir, file), 'utf8').catch(() => '');
    return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as RunRecord);
  }
}

class BucketRecords implements RunRecords {
  private readonly objects: S3SampleStore;

  constructor(ref: string, store?: SampleStore) {
    this.objects = S3SampleStore.at(ref, store);
  }

  private key = (file: RecordFile, step: number) => `${file.replace(/\.jsonl$/, '')}/step-${pad6(step)}.json`;

  has(file: RecordFile, record: RunRecord): Promise<boolean> {
    return this.objects.has(this.key(file, record.step));
  }

  add(file: RecordFile, record: RunRecord): Promise<void> {
    return this.objects.put(this.key(file, record.step), record);
  }

  async read(file: RecordFile): Promise<RunRecord[]> {
    const dir = file.replace(/\.jsonl$/, '');
    const keys = (await this.objects.keysUnder(dir)).sort();
    return Promise.all(keys.map((k) => this.objects.get<RunRecord>(`${dir}/${k}`)));
  }
}
