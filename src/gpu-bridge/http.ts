/**
 * JSON over HTTP to one engine server. Node's fetch keeps connections alive
 * per origin, so repeated calls reuse sockets. Every failure is classified
 * into the bridge's named errors.
 */
import { VersionBehindSchema } from './contracts/inference';
import { EngineRejectedError, EngineUnavailableError, EngineVersionBehindError } from './errors';

export interface RequestOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  timeoutMs?: number;
  /** Cancels the call (e.g. an activity's cancellation signal). */
  signal?: AbortSignal;
}

/** undici's error code (ECONNREFUSED, UND_ERR_SOCKET, …) when it gives one, else `otherwise`. */
const failureCode = (e: unknown, otherwise = String(e)) => (e as { cause?: { code?: string } }).cause?.code ?? otherwise;

/** Sends the request; a failed connection (refused, reset, timed out) is an unreachable EngineUnavailableError. */
async function send(url: string, opts: RequestOptions): Promise<{ res: Response; timeout: AbortSignal }> {
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 30_000);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  try {
    const res = await fetch(url, {
      method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
      headers: opts.body === undefined ? undefined : { 'content-type': 'application/json' },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal,
    });
    return { res, timeout };
  } catch (e) {
    if (opts.signal?.aborted) throw opts.signal.reason ?? e;
    throw new EngineUnavailableError(`${url}: ${failureCode(e, timeout.aborted ? 'timeout' : String(e))}`, true);
  }
}

/** Reads the whole body; the connection breaking mid-body is the same failure as no answer. */
async function readText(url: string, res: Response, opts: RequestOptions): Promise<string> {
  try {
    return await res.text();
  } catch (e) {
    if (opts.signal?.aborted) throw opts.signal.reason ?? e;
    throw new EngineUnavailableError(`${url}: ${failureCode(e)}`, true);
  }
}

/** The named error of an HTTP error status (>= 400). */
function statusError(url: string, status: number, text: string): Error {
  if (status >= 500) return new EngineUnavailableError(`${url}: HTTP ${status} ${text.slice(0, 500)}`);
  if (status === 409) {
    const behind = VersionBehindSchema.safeParse(safeJson(text));
    if (behind.success) return new EngineVersionBehindError(`${url}: ${behind.data.error}`, behind.data.version, behind.data.min_version);
  }
  return new EngineRejectedError(`${url}: HTTP ${status} ${text.slice(0, 500)}`, status);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export async function requestJson<T>(url: string, opts: RequestOptions = {}): Promise<T> {
  const { res } = await send(url, opts);
  const text = await readText(url, res, opts);
  if (res.status >= 400) throw statusError(url, res.status, text);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new EngineRejectedError(`${url}: response is not JSON: ${text.slice(0, 200)}`, res.status);
  }
}

/** A response checked against the shared contract schema, so drift between TypeScript and python-engines fails at the first call. */
type Schema<T> = { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Error } };

function checked<T>(url: string, schema: Schema<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new EngineRejectedError(`${url}: response does not match the contract: ${parsed.error.message}`, 502);
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
  const { res } = await send(url, opts);
  if (res.status >= 400) throw statusError(url, res.status, await readText(url, res, opts));
  if (!res.body) throw new EngineRejectedError(`${url}: a streamed answer has no body`, res.status);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (e) {
        if (opts.signal?.aborted) throw opts.signal.reason ?? e;
        throw new EngineUnavailableError(`${url}: ${failureCode(e)}`, true);
      }
      if (chunk.done) throw new EngineUnavailableError(`${url}: the stream ended before [DONE]`, true);
      buffered += decoder.decode(chunk.value, { stream: true });
      let end: number;
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const lines = buffered.slice(0, end).split('\n');
        buffered = buffered.slice(end + 2);
        const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        if (lines.includes('event: error')) throw new EngineUnavailableError(`${url}: the stream failed: ${data.slice(0, 500)}`);
        if (data === '[DONE]') return;
        onEvent(checked(url, schema, safeJson(data)));
      }
    }
  } finally {
    // Ends the request if we stop reading early (the server drops the generation); a no-op after [DONE].
    reader.cancel().catch(() => undefined);
  }
}
