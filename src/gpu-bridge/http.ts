/**
 * JSON over HTTP to one engine server. Node's fetch keeps connections alive
 * per origin, so repeated calls reuse sockets. Every failure is classified
 * into the bridge's named errors, with a message of bounded length:
 *
 * - EngineUnavailableError (retrying may help): no connection, a connection
 *   reset before or during the body, no whole answer within the timeout, any
 *   5xx (JSON, an HTML page from a proxy, or nothing), and a 2xx that claims
 *   JSON but is empty or cut short;
 * - EngineRejectedError (retrying cannot help): any 4xx (the message quotes
 *   the engine's `error`), a 2xx that is not JSON at all (an HTML page: the
 *   url is not an engine), a reply over maxResponseBytes, and (callChecked) a
 *   reply that does not match the contract.
 *
 * The bridge itself never retries: retries belong to the activities' policies.
 */
import { EngineBusyError, EngineRejectedError, EngineUnavailableError } from './errors';
import { errorCode, errorOf, excerpt, readBounded } from './reply';

/** Error codes (python-engines' errors.py `code`) that mean "busy with the same work": retryable. */
const BUSY_CODES = new Set(['trainer_busy']);

export interface RequestOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  timeoutMs?: number;
  /** Cancels the call (e.g. an activity's cancellation signal). */
  signal?: AbortSignal;
  /** Longest reply body read; a longer one is refused unread. Default 256 MiB (a generation with n = 64 long samples is ~10 MB). */
  maxResponseBytes?: number;
}

const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

/** undici's error code (ECONNREFUSED, UND_ERR_SOCKET, …) when it gives one, else `otherwise`. */
const failureCode = (e: unknown, otherwise = String(e)) => (e as { cause?: { code?: string } }).cause?.code ?? otherwise;

const isJsonType = (contentType: string | null) => contentType === null || /[/+]json\b/i.test(contentType);

export async function requestJson<T>(url: string, opts: RequestOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  // Whichever way the call breaks: the caller's cancellation passes through, anything else may pass with a retry.
  const unavailable = (e: unknown) => {
    if (opts.signal?.aborted) return opts.signal.reason ?? e;
    return new EngineUnavailableError(`${url}: ${timeout.aborted ? `no whole answer within ${timeoutMs} ms` : failureCode(e)}`);
  };
  let res: Response;
  try {
    res = await fetch(url, {
      method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
      headers: opts.body === undefined ? undefined : { 'content-type': 'application/json' },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal,
    });
  } catch (e) {
    throw unavailable(e);
  }
  let text: string;
  try {
    text = await readBounded(res, opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, url);
  } catch (e) {
    if (e instanceof EngineRejectedError) throw e;
    throw unavailable(e); // the connection broke mid-body: the same retryable failure as no answer
  }
  if (res.status >= 500) throw new EngineUnavailableError(`${url}: HTTP ${res.status} ${errorOf(text)}`);
  if (res.status >= 400) {
    const code = errorCode(text);
    if (code !== undefined && BUSY_CODES.has(code)) throw new EngineBusyError(`${url}: HTTP ${res.status} ${errorOf(text)}`);
    throw new EngineRejectedError(`${url}: HTTP ${res.status} ${errorOf(text)}`, res.status, code);
  }
  const contentType = res.headers.get('content-type');
  if (!isJsonType(contentType)) throw new EngineRejectedError(`${url}: answered ${contentType}, not JSON (is this an engine's url?): ${excerpt(text)}`, 502);
  try {
    return JSON.parse(text) as T;
  } catch {
    const what = text.trim() === '' ? 'an empty body' : `JSON cut short or garbled: ${excerpt(text)}`;
    throw new EngineUnavailableError(`${url}: HTTP ${res.status} with ${what}`);
  }
}

/**
 * A call whose response is checked against the shared contract schema, so
 * drift between TypeScript and python-engines fails at the first call.
 */
export async function callChecked<T>(baseUrl: string, path: string, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Error } }, opts: RequestOptions = {}): Promise<T> {
  const url = new URL(path, baseUrl).toString();
  const parsed = schema.safeParse(await requestJson<unknown>(url, opts));
  if (!parsed.success) throw new EngineRejectedError(`${url}: response does not match the contract: ${excerpt(parsed.error.message)}`, 502);
  return parsed.data;
}
