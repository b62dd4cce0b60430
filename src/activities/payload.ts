/**
 * The guard on activity results that carry what can grow (prompts,
 * observations, generated text): the workflow would record them in its
 * history and pass them on as the next activity's input, and the server
 * rejects a payload above 2 MB, so a too-large result fails its group with a
 * named error instead. Not a claim check (passing such text by store key):
 * at the default 1 MiB an observation is some 250k tokens, beyond the context
 * the servers would generate from, so failing names the real problem.
 */
import { PayloadTooLargeError } from '../core';

const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '');

/** The biggest field of the result (of any element, for an array of results): what grew. */
function largestField(result: unknown): { field: string; bytes: number } | undefined {
  const fields = (value: unknown, prefix: string) => (value !== null && typeof value === 'object' ? Object.entries(value).map(([k, v]) => ({ field: `${prefix}${k}`, bytes: bytesOf(v) })) : []);
  const all = Array.isArray(result) ? result.flatMap((r, i) => fields(r, `[${i}].`)) : fields(result, '');
  return all.sort((a, b) => b.bytes - a.bytes)[0];
}

/** Returns `result`, or throws PayloadTooLargeError naming the activity, the field that grew and the sizes. */
export function guardResult<T>(activity: string, result: T, maxBytes: number): T {
  const bytes = bytesOf(result);
  if (bytes <= maxBytes) return result;
  const largest = largestField(result);
  const what = largest ? `its ${largest.field} is ${largest.bytes} bytes` : 'it';
  throw new PayloadTooLargeError(`${activity}: the result is ${bytes} bytes (${what}), above temporal.worker.max_result_bytes ${maxBytes}; Temporal rejects payloads above 2 MB`);
}
