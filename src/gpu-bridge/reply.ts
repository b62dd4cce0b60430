/**
 * Reading an engine's reply body within bounds, and short, readable excerpts
 * of replies for error messages (an error must never carry a whole reply: a
 * Temporal failure message lands in workflow histories).
 */
import { EngineRejectedError } from './errors';

/** Longest excerpt of a reply an error message quotes, in characters. */
export const EXCERPT_CHARS = 300;

/**
 * The body as text. Past `maxBytes` it stops reading and throws EngineRejectedError: asking again
 * would bring the same reply, and holding it could exhaust the worker's memory.
 */
export async function readBounded(res: Response, maxBytes: number, url: string): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new EngineRejectedError(`${url}: HTTP ${res.status} reply body passed ${maxBytes} bytes (maxResponseBytes); not read further`, 502);
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** `text` on one line, HTML tags dropped, cut to EXCERPT_CHARS with a marker giving its full length. */
export function excerpt(text: string): string {
  const plain = (/^\s*<(!doctype|html)/i.test(text) ? text.replace(/<(script|style)[\s\S]*?<\/\1>|<[^>]*>/gi, ' ') : text).replace(/\s+/g, ' ').trim();
  return plain.length <= EXCERPT_CHARS ? plain : `${plain.slice(0, EXCERPT_CHARS)}… [cut: ${plain.length} characters in all]`;
}

/** What an error reply says: the `error` of python-engines' error body when it has one, else an excerpt of the text. */
/** The `code` of a python-engines error body (errors.py), if it has one. */
export function errorCode(text: string): string | undefined {
  try {
    const code = (JSON.parse(text) as { code?: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

export function errorOf(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === 'string') return excerpt(body.error);
  } catch {
    // not the engines' error body: quote the text itself
  }
  return text.trim() === '' ? '(empty body)' : excerpt(text);
}
