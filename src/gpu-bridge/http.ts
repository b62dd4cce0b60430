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
 * - EngineBusyError (retry later): a 409 whose code says the engine is busy
 *   with the same work; EngineVersionBehindError: an inference server behind
 *   the min_version asked (the caller catches it up).
 *
 * An `unreachable` EngineUnavailableError (the connection itself failed) is
 * the sign of a dead server the inference pool routes around. The bridge
 * itself never retries: retries belong to the activities' policies.
 */
import { VersionBehindSchema } from './contracts/inference';
import { EngineBusyError, EngineRejectedError, EngineUnavailableError, EngineVersionBehindError } from './errors';
import { errorCode, errorOf, excerpt, readBounded } from './reply';

/**
 * Error codes (python-engines' errors.py `code`) that mean "not now": retryable. trainer_busy: a retried train
 * step met its first attempt still running. not_paused: an inference server was resumed between a sync's pause
 * and its update (a catch-up of that server ran beside it); the sync's retry pauses it again and converges.
 */
const RETRY_LATER_CODES = new Set(['trainer_busy', 'not_paused']);

export interface RequestOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  timeoutMs?: number;
  /** Cancels the call (e.g. an activity's cancellation signal). */
  signal?: AbortSignal;
  /** Longest reply body read; a longer one is refused unread. Default 256 MiB (a generation with n = 64 long samples is ~10 MB). */
  maxResponseBytes?: number;
  /**
   * Streams: longest wait for any byte (headers, an event, a keep-alive comment) before the server
   * is taken for hung, an unreachable EngineUnavailableError like a dead one. Unset, only timeoutMs bounds it.
   */
  idleTimeoutMs?: number;
}

const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

/** undici's error code (ECONNREFUSED, UND_ERR_SOCKET, …) when it gives one, else `otherwise`. */
const failureCode = (e: unknown, otherwise = String(e)) => (e as { cause?: { code?: string } }).cause?.code ?? otherwise;

const isJsonType = (contentType: string | null) => contentType === null || /[/+]json\b/i.test(contentType);

/**
 * A request under way: its response, how a broken connection is reported (the caller's cancellation
 * passes through), and its idle guard: `alive` when a byte arrived, `settled` when the call is over.
 */
interface Sent {
  res: Response;
  lost: (e: unknown) => unknown;
  alive: () => void;
  settled: () => void;
}

/** Aborts when `ms` pass without `alive()`; never, when `ms` is undefined. */
function idleGuard(ms: number | undefined) {
  const idle = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const alive = () => {
    if (ms === undefined || idle.signal.aborted) return;
    clearTimeout(timer);
    timer = setTimeout(() => idle.abort(), ms);
  };
  alive();
  return { signal: idle.signal, alive, settled: () => clearTimeout(timer) };
}

/** Sends the request; a failed connection (refused, reset, timed out, hung) is an unreachable EngineUnavailableError. */
async function send(url: string, opts: RequestOptions): Promise<Sent> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const timeout = AbortSignal.timeout(timeoutMs);
  const idle = idleGuard(opts.idleTimeoutMs);
  const signal = AbortSignal.any([...(opts.signal ? [opts.signal] : []), timeout, idle.signal]);
  const lost = (e: unknown) => {
    if (opts.signal?.aborted) return opts.signal.reason ?? e;
    const why = timeout.aborted ? `no whole answer within ${timeoutMs} ms` : idle.signal.aborted ? `not a byte for ${opts.idleTimeoutMs} ms (the server is hung)` : failureCode(e);
    return new EngineUnavailableError(`${url}: ${why}`, true);
  };
  try {
    const res = await fetch(url, {
      method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
      headers: opts.body === undefined ? undefined : { 'content-type': 'application/json' },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal,
    });
    idle.alive();
    return { res, lost, alive: idle.alive, settled: idle.settled };
  } catch (e) {
    idle.settled();
    throw lost(e);
  }
}

/** Reads the whole body, at most maxResponseBytes; the connection breaking mid-body is the same failure as no answer. */
async function readText(url: string, { res, lost }: Sent, opts: RequestOptions): Promise<string> {
  try {
    return await readBounded(res, opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, url);
  } catch (e) {
    if (e instanceof EngineRejectedError) throw e;
    throw lost(e);
  }
}

/** The named error of an HTTP error status (>= 400). */
function statusError(url: string, status: number, text: string): Error {
  if (status >= 500) return new EngineUnavailableError(`${url}: HTTP ${status} ${errorOf(text)}`);
  if (status === 409) {
    const behind = VersionBehindSchema.safeParse(safeJson(text));
    if (behind.success) return new EngineVersionBehindError(`${url}: ${behind.data.error}`, behind.data.version, behind.data.min_version);
  }
  const code = errorCode(text);
  if (code !== undefined && RETRY_LATER_CODES.has(code)) return new EngineBusyError(`${url}: HTTP ${status} ${errorOf(text)}`);
  return new EngineRejectedError(`${url}: HTTP ${status} ${errorOf(text)}`, status, code);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export async function requestJson<T>(url: string, opts: RequestOptions = {}): Promise<T> {
  const sent = await send(url, opts);
  const { res } = sent;
  const text = await readText(url, sent, opts).finally(sent.settled);
  if (res.status >= 400) throw statusError(url, res.status, text);
  const contentType = res.headers.get('content-type');
  if (!isJsonType(contentType)) throw new EngineRejectedError(`${url}: answered ${contentType}, not JSON (is this an engine's url?): ${excerpt(text)}`, 502);
  try {
    return JSON.parse(text) as T;
  } catch {
    const what = text.trim() === '' ? 'an empty body' : `JSON cut short or garbled: ${excerpt(text)}`;
    throw new EngineUnavailableError(`${url}: HTTP ${res.status} with ${what}`);
  }
}

/** A response checked against the shared contract schema, so drift between TypeScript and python-engines fails at the first call. */
type Schema<T> = { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Error } };

function checked<T>(url: string, schema: Schema<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new EngineRejectedError(`${url}: response does not match the contract: ${excerpt(parsed.error.message)}`, 502);
  return parsed.data;
}

export async function callChecked<T>(baseUrl: string, path: string, schema: Schema<T>, opts: RequestOptions = {}): Promise<T> {
  const url = new URL(path, baseUrl).toString();
  return checked(url, schema, await requestJson<unknown>(url, opts));
}

/**
 * A POST answered with server-sent events: each `data:` event is checked
 * against `schema` and handed to `onEvent` as it arrives, until `data: [DONE]`.
 * A stream that ends without [DONE] was cut (the server died): an unreachable
 * EngineUnavailableError, raised after every complete event was delivered.
 */
export async function streamChecked<T>(baseUrl: string, path: string, schema: Schema<T>, onEvent: (event: T) => void, opts: RequestOptions = {}): Promise<void> {
  const url = new URL(path, baseUrl).toString();
  const sent = await send(url, opts);
  const { res } = sent;
  if (res.status >= 400) throw statusError(url, res.status, await readText(url, sent, opts).finally(sent.settled));
  if (!res.body) {
    sent.settled();
    throw new EngineRejectedError(`${url}: a streamed answer has no body`, res.status);
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (e) {
        throw sent.lost(e);
      }
      if (chunk.done) throw new EngineUnavailableError(`${url}: the stream ended before [DONE]`, true);
      sent.alive();
      buffered += decoder.decode(chunk.value, { stream: true });
      let end: number;
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const lines = buffered.slice(0, end).split('\n');
        buffered = buffered.slice(end + 2);
        const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        if (lines.includes('event: error')) throw new EngineUnavailableError(`${url}: the stream failed: ${excerpt(data)}`);
        if (!lines.some((l) => l.startsWith('data: '))) continue; // a comment (the server's keep-alive) or an empty event
        if (data === '[DONE]') return;
        onEvent(checked(url, schema, safeJson(data)));
      }
    }
  } finally {
    sent.settled();
    // Ends the request if we stop reading early (the server drops the generation); a no-op after [DONE].
    reader.cancel().catch(() => undefined);
  }
}
