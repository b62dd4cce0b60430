/**
 * A sample store in an S3-compatible bucket (AWS SDK v3): what hosts that share no disk read and write.
 *
 * Where the store is and who may use it come only from the standard AWS variables and files (AWS_CONFIG_FILE's
 * endpoint_url and region, AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE, AWS_ACCESS_KEY_ID, …); the run config names
 * the bucket and a key prefix, never a credential. The object format, shared with python-engines' objects.py:
 * - a PUT is whole or absent, so a reader sees the old object or the new one, never half; bodies over 8 MiB go
 *   multipart (lib-storage), whose object appears only when the upload completes;
 * - every object carries user metadata `sha256`, the hex SHA-256 of its whole body, and each upload sends a
 *   SHA-256 checksum the server checks; every read is verified against `sha256`, so a damaged object is an
 *   error (ObjectCorruptError), never data.
 */
import { createHash } from 'node:crypto';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, NoSuchKey, NotFound, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { ObjectCorruptError, SampleNotFoundError } from './errors';
import { parseObjectRef } from '../core';
import { checkKey, parseJsonLines, type SampleStore } from './store';

/** Bodies above this go multipart (lib-storage's part size: S3's minimum part is 5 MiB). */
export const MULTIPART_BYTES = 8 * 2 ** 20;

const sha256 = (body: Buffer | string) => createHash('sha256').update(body).digest('hex');

export interface S3Location {
  bucket: string;
  /** Prepended to every key: "" or segments ending in "/". */
  prefix: string;
}

export class S3SampleStore implements SampleStore {
  readonly client: S3Client;

  /**
   * `client` defaults to one configured by the AWS variables and files alone. Its own check of a response's
   * stored checksum is off: every read is verified against `sha256` here, one rule for single-part and multipart
   * objects alike (the SDK skips a multipart object's composite checksum), with one error for damage.
   */
  constructor(
    readonly where: S3Location,
    client?: S3Client,
  ) {
    this.client = client ?? new S3Client({ responseChecksumValidation: 'WHEN_REQUIRED' });
  }

  /**
   * The store under an s3://<bucket>/<path> ref (a run's directory in its bucket, RunPlan.bucketRunDir), its keys
   * relative to the ref. With `sameBucket`, the run's own store, its client is shared when the bucket is the same.
   */
  static at(ref: string, sameBucket?: SampleStore): S3SampleStore {
    const { bucket, key } = parseObjectRef(ref.replace(/\/+$/, ''));
    const shared = sameBucket instanceof S3SampleStore && sameBucket.where.bucket === bucket ? sameBucket.client : undefined;
    return new S3SampleStore({ bucket, prefix: `${key}/` }, shared);
  }

  private objectKey(key: string): string {
    return `${this.where.prefix}${checkKey(key)}`;
  }

  locate(key: string): string {
    return `s3://${this.where.bucket}/${this.objectKey(key)}`;
  }

  async put(key: string, value: unknown): Promise<void> {
    await this.write(key, JSON.stringify(value), 'application/json');
  }

  async putLines(key: string, values: readonly unknown[]): Promise<void> {
    await this.write(key, values.map((v) => `${JSON.stringify(v)}\n`).join(''), 'application/jsonl');
  }

  async get<T>(key: string): Promise<T> {
    return JSON.parse(await this.read(key)) as T;
  }

  async getLines<T>(key: string): Promise<T[]> {
    return parseJsonLines<T>(await this.read(key));
  }

  async has(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.where.bucket, Key: this.objectKey(key) }));
      return true;
    } catch (e) {
      if (e instanceof NotFound) return false;
      throw e;
    }
  }

  async keys(dir: string): Promise<string[]> {
    return this.list(`${this.objectKey(dir)}/`, '/');
  }

  /**
   * Every key under `dir` at any depth (relative to it, sorted); with no `dir`, every key under the prefix. Not part of
   * SampleStore: the bucket's trainer states (activities/trainer-states.ts) list and remove whole states with it.
   */
  async keysUnder(dir?: string): Promise<string[]> {
    return this.list(dir === undefined ? this.where.prefix : `${this.objectKey(dir)}/`);
  }

  /** Removes the object under `key` (nothing to do if there is none). */
  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.where.bucket, Key: this.objectKey(key) }));
  }

  /** The keys that start with `prefix` (relative to it, sorted); with `delimiter`, only those with none after it. */
  private async list(prefix: string, delimiter?: string): Promise<string[]> {
    const found: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.where.bucket, Prefix: prefix, Delimiter: delimiter, ContinuationToken: token }));
      for (const o of page.Contents ?? []) if (o.Key) found.push(o.Key.slice(prefix.length));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return found.sort();
  }

  private async write(key: string, text: string, contentType: string): Promise<void> {
    const body = Buffer.from(text);
    const params = { Bucket: this.where.bucket, Key: this.objectKey(key), Body: body, ContentType: contentType, Metadata: { sha256: sha256(body) }, ChecksumAlgorithm: 'SHA256' as const };
    if (body.length <= MULTIPART_BYTES) {
      await this.client.send(new PutObjectCommand(params));
      return;
    }
    // leavePartsOnError false: a failed upload is aborted, so no parts linger (the object never appeared).
    await new Upload({ client: this.client, params, partSize: MULTIPART_BYTES, queueSize: 2, leavePartsOnError: false }).done();
  }

  private async read(key: string): Promise<string> {
    const ref = this.locate(key);
    let body: Buffer;
    let expected: string | undefined;
    try {
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.where.bucket, Key: this.objectKey(key) }));
      body = Buffer.from(await got.Body!.transformToByteArray());
      expected = got.Metadata?.sha256;
    } catch (e) {
      if (e instanceof NoSuchKey) throw new SampleNotFoundError(`no object "${key}" in s3://${this.where.bucket}/${this.where.prefix}`);
      throw e;
    }
    const actual = sha256(body);
    if (expected === undefined) throw new ObjectCorruptError(`${ref} carries no sha256 metadata: not written by rollflow, or its metadata was lost; refusing to read it unverified`);
    if (expected !== actual) throw new ObjectCorruptError(`${ref} is damaged: its body's SHA-256 is ${actual}, its sha256 metadata says ${expected}`);
    return body.toString('utf8');
  }
}
