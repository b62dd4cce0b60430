/** Where a run's sample store is (config sample_store, resolved): a directory, or a bucket and a key prefix. */
export type SampleStoreLocation = { kind: 'dir'; path: string } | { kind: 's3'; bucket: string; prefix: string };

/** The store in words and as one string (a log line, a fingerprint): a directory's path or an s3:// URL. */
export const describeStore = (s: SampleStoreLocation): string => (s.kind === 'dir' ? s.path : `s3://${s.bucket}/${s.prefix}`);

/** True for an s3://<bucket>/<key> ref (objects in a bucket), false for a path on some machine. */
export const isObjectRef = (p: string): boolean => p.startsWith('s3://');

/** The directory of a directory store, for a reader of its files (`who`); a bucket has none: an Error naming both. */
export function storeDirectory(s: SampleStoreLocation, who: string): string {
  if (s.kind === 'dir') return s.path;
  throw new Error(`${who} reads the sample store's files from its directory; this run's store is the bucket ${describeStore(s)} (sample_store.kind s3)`);
}

/** An s3://<bucket>/<key> ref's bucket and key; an Error naming the ref and the form expected otherwise. */
export function parseObjectRef(ref: string): { bucket: string; key: string } {
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])\/(.+)$/.exec(ref);
  if (!m || m[2]!.startsWith('/')) throw new Error(`${JSON.stringify(ref)} is not an object ref: expected s3://<bucket>/<key>`);
  return { bucket: m[1]!, key: m[2]! };
}
