/**
 * JSON over HTTP to one engine server. Node's fetch keeps connections alive
 * per origin, so repeated calls reuse sockets. Every failure is classified
 * into the bridge's named errors.
 */
import { EngineBusyError, EngineRejectedError, EngineUnavailableError } from './errors';

/** Error codes (python-engines' errors.py `code`) that mean "busy with the same work": retryable. */
const BUSY_CODES = new Set(['trainer_busy']);

/** The `code` of a python-engines error body, if it has one. */
function errorCode(text: string): string | undefined {
  try {
    const code = (JSON.parse(text) as { code?: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

export interface RequestOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  timeoutMs?: number;
  /** Cancels the call (e.g. an activity's cancellation signal). */
  signal?: AbortSignal;
}

/** undici's error code (ECONNREFUSED, UND_ERR_SOCKET, …) when it gives one, else `otherwise`. */
const failureCode = (e: unknown, otherwise = String(e)) => (e as { cause?: { code?: string } }).cause?.code ?? otherwise;

export async function requestJson<T>(url: string, opts: RequestOptions = {}): Promise<T> {
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 30_000);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  let res: Response;
  try {
    res = await fetch(url, {
      method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
      headers: opts.body === undefined ? undefined : { 'content-type': 'application/json' },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal,
    });
  } catch (e) {
    if (opts.signal?.aborted) throw opts.signal.reason ?? e;
    throw new EngineUnavailableError(`${url}: ${failureCode(e, timeout.aborted ? 'timeout' : String(e))}`);
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    // The connection broke mid-body: the same retryable failure as no answer.
    if (opts.signal?.aborted) throw opts.signal.reason ?? e;
    throw new EngineUnavailableError(`${url}: ${failureCode(e)}`);
  }
  if (res.status >= 500) throw new EngineUnavailableError(`${url}: HTTP ${res.status} ${text.slice(0, 500)}`);
  if (res.status >= 400) {
    const code = errorCode(text);
    if (code !== undefined && BUSY_CODES.has(code)) throw new EngineBusyError(`${url}: HTTP ${res.status} ${text.slice(0, 500)}`);
    throw new EngineRejectedError(`${url}: HTTP ${res.status} ${text.slice(0, 500)}`, res.status, code);
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new EngineRejectedError(`${url}: response is not JSON: ${text.slice(0, 200)}`, res.status);
  }
}

/**
 * A call whose response is checked against the shared contract schema, so
 * drift between TypeScript and python-engines fails at the first call.
 */
export async function callChecked<T>(baseUrl: string, path: string, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Error } }, opts: RequestOptions = {}): Promise<T> {
  const url = new URL(path, baseUrl).toString();
  const parsed = schema.safeParse(await requestJson<unknown>(url, opts));
  if (!parsed.success) throw new EngineRejectedError(`${url}: response does not match the contract: ${parsed.error.message}`, 502);
  return parsed.data;
}
