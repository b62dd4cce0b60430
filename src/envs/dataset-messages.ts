/**
 * A dataset row's prompt given as chat messages (verl's `prompt` column, ROLL's
 * `messages`): checked message by message, so a bad one is a malformed row
 * reported by its row, never a 400 from the inference server mid-run. The
 * messages go to generation as they are (the server applies the chat
 * template, system message included); `renderMessages` is the readable
 * prompt the UI, the logs and the verifiers see.
 */
import type { ChatMessage } from '../gpu-bridge';

/** The row's messages, or why they cannot be sent (a sentence after "prompt messages: "). */
export function checkMessages(value: unknown): ChatMessage[] | { why: string } {
  if (!Array.isArray(value)) return { why: `expected a list of {role, content}, got ${describe(value)}` };
  if (value.length === 0) return { why: 'the list is empty' };
  const messages: ChatMessage[] = [];
  for (const [i, m] of value.entries()) {
    if (typeof m !== 'object' || m === null || Array.isArray(m)) return { why: `message ${i} is ${describe(m)}, not an object` };
    const { role, content, ...rest } = m as Record<string, unknown>;
    if (typeof role !== 'string' || role === '') return { why: `message ${i} needs a non-empty string role, got ${describe(role)}` };
    if (typeof content !== 'string') return { why: `message ${i} (${role}) needs a string content, got ${describe(content)}` };
    // A parquet list of structs gives every message every field of the column, null where a row has none: those are
    // absent, not dropped. A field with a value (tool_calls, a name) would be lost on the way to the server, so it is refused.
    const extra = Object.entries(rest).filter(([, v]) => v !== null && v !== undefined).map(([k]) => k);
    if (extra.length) return { why: `message ${i} (${role}) has ${extra.join(', ')}; only role and content are sent to the model` };
    messages.push({ role, content });
  }
  return messages;
}

/** ROLL writes `messages` as a JSON string of the list; verl as the list itself. */
export function parseMessages(value: unknown): ChatMessage[] | { why: string } {
  if (typeof value !== 'string') return checkMessages(value);
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (e) {
    return { why: `a string that is not a JSON list of messages (${(e as Error).message})` };
  }
  return checkMessages(parsed);
}

/** A single user message is the prompt itself; a conversation reads as `role: content` paragraphs. */
export function renderMessages(messages: ChatMessage[]): string {
  if (isPlainPrompt(messages)) return messages[0]!.content;
  return messages.map((m) => `${m.role}: ${m.content}`).join('\n\n');
}

/** One user message says no more than its text: generation gets it as the observation, as for a text prompt. */
export const isPlainPrompt = (messages: ChatMessage[]): boolean => messages.length === 1 && messages[0]!.role === 'user';

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Uint8Array) return 'bytes';
  return typeof value === 'string' ? JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value) : `${typeof value === 'object' ? 'an' : 'a'} ${typeof value}`;
}
