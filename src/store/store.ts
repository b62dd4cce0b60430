/**
 * The sample store: token ids, logprobs, versions and env observations live
 * here, written and read by activities; workflows carry only keys (Temporal
 * payloads are capped at 2 MB, histories at 50 MB). A directory is the
 * only implementation (a bucket for a cluster would implement this interface;
 * none exists yet).
 */
import { InvalidKeyError } from './errors';

export interface SampleStore {
  /** Writes `value` as JSON under `key`, atomically: readers see the old object or the new one, never half. */
  put(key: string, value: unknown): Promise<void>;
  /** Writes newline-delimited JSON (one line per value) under `key`, atomically. */
  putLines(key: string, values: readonly unknown[]): Promise<void>;
  /** Reads the JSON object under `key`; throws SampleNotFoundError. */
  get<T>(key: string): Promise<T>;
  has(key: string): Promise<boolean>;
  /** Where an engine on this machine reads `key` from (a file path; a URL for remote stores). */
  locate(key: string): string;
}

const KEY = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/;

/** Checks a key: relative, "/"-separated, no "." or ".." segments. */
export function checkKey(key: string): string {
  if (!KEY.test(key) || key.split('/').some((part) => part === '.' || part === '..')) {
    throw new InvalidKeyError(`invalid sample store key ${JSON.stringify(key)}: expected segments of [A-Za-z0-9_.-] joined by "/"`);
  }
  return key;
}
