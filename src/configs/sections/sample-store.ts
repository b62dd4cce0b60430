/** sample_store (rollflow): a directory on this machine, or an S3-compatible bucket for hosts that share no disk. */
import { z } from 'zod';

/** S3's bucket naming rules (3-63 characters: lowercase letters, digits, dots and hyphens, a letter or digit at each end). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
/** Key segments as the store's keys have them (store/store.ts checkKey), none "." or "..". */
const PREFIX = /^(?!\.\.?(\/|$))[A-Za-z0-9_.-]+(\/(?!\.\.?(\/|$))[A-Za-z0-9_.-]+)*\/?$/;

export const SampleStoreSchema = z
  .strictObject({
    kind: z.enum(['dir', 's3']).default('dir').describe('dir: a directory on this machine (the default); s3: an S3-compatible bucket, for hosts that share no disk. The bucket\'s endpoint, region and credentials come from the standard AWS variables and files (AWS_CONFIG_FILE with endpoint_url, AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE, AWS_ACCESS_KEY_ID…), never from this config; object-store/versitygw.sh starts a local one and prints them.'),
    path: z.string().min(1).optional().describe('kind dir: where samples are written; defaults to <run_dir>/samples.'),
    bucket: z.string().regex(BUCKET, 'an S3 bucket name: 3-63 lowercase letters, digits, "." or "-", a letter or digit at each end').optional().describe('kind s3: the bucket (it must exist).'),
    prefix: z.string().regex(PREFIX, 'key segments of [A-Za-z0-9_.-] joined by "/", none "." or ".."').optional().describe('kind s3: a prefix for every key (e.g. team-a/runs), so runs of several configs share a bucket; default none.'),
  })
  .superRefine((s, ctx) => {
    const misplaced = (key: 'path' | 'bucket' | 'prefix', why: string) => ctx.addIssue({ code: 'custom', path: [key], message: why });
    if (s.kind === 'dir') {
      if (s.bucket !== undefined) misplaced('bucket', 'a bucket is for kind s3; this store is a directory (kind dir): set kind: s3, or leave bucket out');
      if (s.prefix !== undefined) misplaced('prefix', 'a key prefix is for kind s3; this store is a directory (kind dir): set kind: s3, or leave prefix out');
    } else {
      if (s.bucket === undefined) ctx.addIssue({ code: 'custom', path: ['bucket'], message: 'kind s3 needs the bucket to write to (it must exist)' });
      if (s.path !== undefined) misplaced('path', 'path is where a directory store is; this store is a bucket (kind s3): leave path out, or set kind: dir');
    }
  })
  .prefault({})
  .describe('(rollflow) Where token ids, logprobs and observations live; workflows carry only keys.');
