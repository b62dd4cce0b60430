/**
 * The sample store: token ids, logprobs, versions and env observations live
 * here, written and read by activities; workflows carry only keys (Temporal
 * payloads are capped at 2 MB, histories at 50 MB). Two implementations: a
 * directory (directory.ts, the embedded default) and an S3-compatible bucket
 * (s3.ts), for hosts that share no disk.
 */
import { InvalidKeyError, SampleNotFoundError } from './errors';

export interface SampleStore {
  /** Writes `value` as JSON under `key`, atomically: readers see the old object or the new one, never half. */
  put(key: string, value: unknown): Promise<void>;
  /** Writes newline-delimited JSON (one line per value) under `key`, atomically. */
  putLines(key: string, values: readonly unknown[]): Promise<void>;
  /** Reads the JSON object under `key`; throws SampleNotFoundError. */
  get<T>(key: string): Promise<T>;
  /** Reads the newline-delimited JSON under `key` (putLines's), one value per line; throws SampleNotFoundError. */
  getLines<T>(key: string): Promise<T[]>;
  has(key: string): Promise<boolean>;
  /** The keys directly under `dir` (relative to it, sorted); none when there are none. */
  keys(dir: string): Promise<string[]>;
  /** Where an engine reads `key` from: a file path (on this machine), or an s3:// URL. */
  locate(key: string): string;
}

/** The JSON object under `key`, or undefined when there is none (any other failure still throws). */
export async function getIfPresent<T>(store: SampleStore, key: string): Promise<T | undefined> {
  try {
    return await store.get<T>(key);
  } catch (e) {
    if (e instanceof SampleNotFoundError) return undefined;
    throw e;
  }
}

/** The values of newline-delimited JSON (putLines's format), one per non-empty line. */
export const parseJsonLines = <T>(text: string): T[] =>
  text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as T);

const KEY = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/;

/** Checks a key: relative, "/"-separated, no "." or ".." segments. */
export function checkKey(key: string): string {
  if (!KEY.test(key) || key.split('/').some((part) => part === '.' || part === '..')) {
    throw new InvalidKeyError(`invalid sample store key ${JSON.stringify(key)}: expected segments of [A-Za-z0-9_.-] joined by "/"`);
  }
  return key;
}
