// The sample store in a bucket (src/store/s3.ts) against a real S3-compatible
// server, versitygw, started by the project's own script: configured only by
// the standard AWS files the script writes; every object whole and verified
// on read (a byte flipped on the server's disk is refused, as is an object
// without its digest); a large object written multipart; the same answers as
// the directory store for the same calls.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flipMiddleByte } from '../../src/chaos/file-faults';
import { DirectorySampleStore, MULTIPART_BYTES, ObjectCorruptError, S3SampleStore, SampleNotFoundError, type SampleStore } from '../../src/store';
import { TestObjectStore } from './helpers/object-store';

let server: TestObjectStore;
let s3: S3SampleStore;
let dir: DirectorySampleStore;

beforeAll(async () => {
  server = await TestObjectStore.start();
  Object.assign(process.env, server.env); // what the SDK reads: endpoint_url, region, credentials
  s3 = new S3SampleStore({ bucket: 'rollflow', prefix: 'team/' });
  dir = new DirectorySampleStore(mkdtempSync(path.join(tmpdir(), 'rollflow-dir-store-')));
});

afterAll(() => {
  server?.stop();
});

describe.each([
  ['s3', () => s3],
  ['dir', () => dir],
] as const)('the %s store: the same answers to the same calls', (_, store: () => SampleStore) => {
  it('put/get, putLines/getLines, has, keys; a missing key is SampleNotFoundError', async () => {
    const st = store();
    await st.put('run-a/samples/u1.json', { uid: 'u1', tokens: [1, 2, 3] });
    await st.put('run-a/samples/u2.json', { uid: 'u2' });
    await st.putLines('run-a/batches/step-000000.jsonl', [{ uid: 'u1' }, { uid: 'u2' }]);
    expect(await st.get('run-a/samples/u1.json')).toEqual({ uid: 'u1', tokens: [1, 2, 3] });
    expect(await st.getLines('run-a/batches/step-000000.jsonl')).toEqual([{ uid: 'u1' }, { uid: 'u2' }]);
    expect([await st.has('run-a/samples/u2.json'), await st.has('run-a/samples/u3.json')]).toEqual([true, false]);
    expect(await st.keys('run-a/samples')).toEqual(['u1.json', 'u2.json']);
    expect(await st.keys('run-a')).toEqual([]); // only what is directly under it
    expect(await st.keys('run-b/samples')).toEqual([]);
    await expect(st.get('run-a/samples/u3.json')).rejects.toBeInstanceOf(SampleNotFoundError);
    await st.put('run-a/samples/u1.json', { uid: 'u1', tokens: [4] }); // replaced whole
    expect(await st.get('run-a/samples/u1.json')).toEqual({ uid: 'u1', tokens: [4] });
  });
});

describe('the s3 store', () => {
  it('names objects s3://<bucket>/<prefix><key>, and writes them under the prefix', async () => {
    expect(s3.locate('run-a/batches/step-000001.jsonl')).toBe('s3://rollflow/team/run-a/batches/step-000001.jsonl');
    await s3.put('run-x/one.json', { n: 1 });
    expect(statSync(server.objectFile('team/run-x/one.json')).size).toBe(JSON.stringify({ n: 1 }).length);
  });

  it('refuses a damaged object (a byte flipped on the server\'s disk), naming both digests', async () => {
    await s3.put('run-c/samples/u1.json', { uid: 'u1', tokens: Array.from({ length: 64 }, (_, i) => i) });
    flipMiddleByte(server.objectFile('team/run-c/samples/u1.json'));
    const err = await s3.get('run-c/samples/u1.json').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ObjectCorruptError);
    expect((err as Error).message).toMatch(/s3:\/\/rollflow\/team\/run-c\/samples\/u1\.json is damaged: its body's SHA-256 is [0-9a-f]{64}, its sha256 metadata says [0-9a-f]{64}/);
  });

  it('refuses an object written without its digest', async () => {
    await s3.client.send(new PutObjectCommand({ Bucket: 'rollflow', Key: 'team/run-d/foreign.json', Body: '{"uid":"x"}' }));
    await expect(s3.get('run-d/foreign.json')).rejects.toThrow(/carries no sha256 metadata/);
  });

  it('writes a body over 8 MiB multipart, and reads it back verified', async () => {
    const values = Array.from({ length: 3 }, (_, i) => ({ i, blob: randomBytes(4 * 2 ** 20).toString('base64') }));
    expect(values.map((v) => JSON.stringify(v)).join('\n').length).toBeGreaterThan(MULTIPART_BYTES);
    await s3.putLines('run-e/batches/step-000000.jsonl', values);
    const head = await s3.client.send(new HeadObjectCommand({ Bucket: 'rollflow', Key: 'team/run-e/batches/step-000000.jsonl' }));
    expect(head.ETag, 'a multipart upload\'s ETag ends in -<parts>').toMatch(/-\d+"?$/);
    expect(await s3.getLines('run-e/batches/step-000000.jsonl')).toEqual(values);
  });
});
