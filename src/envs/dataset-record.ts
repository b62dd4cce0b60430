/**
 * One dataset record (a JSON line's object, a parquet row) to a row the env
 * serves, by the configured keys. Shared by both file formats, so a row means
 * the same whatever file it came from. Keys may name nested fields with dots
 * (`reward_model.ground_truth`, verl's answer); a key that is itself a field
 * name, dots included, wins over the path.
 */
import type { ChatMessage } from '../gpu-bridge';
import { checkMessages, isPlainPrompt, parseMessages, renderMessages } from './dataset-messages';

export interface DatasetRow {
  /** The prompt as text: the row's text prompt, or its messages rendered (for the UI, the logs and the verifiers). */
  prompt: string;
  /** The prompt as chat messages, sent to generation in place of one user message; absent for a text prompt or a single user message. */
  messages?: ChatMessage[];
  answer: string;
  domain: string;
}

/** Why a row was skipped. */
export type SkipReason = 'too_large' | 'not_utf8' | 'not_json' | 'not_object' | 'missing_field' | 'bad_messages' | 'duplicate_id';

export interface RowKeys {
  prompt_key: string;
  /** Where set, a field of chat messages (a list, or a JSON string of one) read before prompt_key. */
  messages_key?: string;
  answer_key: string;
  domain_key: string;
  default_domain: string;
  /** Absent: rows are not compared by id. */
  id_key?: string;
  max_row_bytes: number;
}

export class Skip {
  constructor(
    readonly reason: SkipReason,
    readonly why: string,
  ) {}
}

/** The value at `key`: the field of that name, else the dotted path through nested objects. */
export function lookup(record: Record<string, unknown>, key: string): unknown {
  if (key in record) return record[key];
  let value: unknown = record;
  for (const part of key.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** A scalar field as text (parquet's int64 arrives as a bigint); anything else is not one. */
function scalar(value: unknown): string | undefined {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint' ? String(value) : undefined;
}

function promptOf(record: Record<string, unknown>, keys: RowKeys): Pick<DatasetRow, 'prompt' | 'messages'> | Skip | undefined {
  const fromMessages = keys.messages_key === undefined ? undefined : lookup(record, keys.messages_key);
  const raw = fromMessages ?? lookup(record, keys.prompt_key);
  // A text prompt stays text; a list (verl) or the messages field (ROLL, possibly a JSON string) is chat messages.
  if (fromMessages === undefined) {
    const text = scalar(raw);
    if (text !== undefined) return { prompt: text };
    if (!Array.isArray(raw)) return undefined;
  }
  const messages = fromMessages === undefined ? checkMessages(raw) : parseMessages(raw);
  if (!Array.isArray(messages)) return new Skip('bad_messages', `prompt messages (${fromMessages === undefined ? keys.prompt_key : keys.messages_key}): ${messages.why}`);
  return { prompt: renderMessages(messages), ...(isPlainPrompt(messages) ? {} : { messages }) };
}

/**
 * The row, a Skip saying why it cannot be served, or a Skip for a repeated id
 * (`seenIds`: id → where it was first, e.g. "line 3"; `at` is this record's place).
 */
export function rowOf(record: Record<string, unknown>, keys: RowKeys, seenIds: Map<string, string>, at: string): DatasetRow | Skip {
  const prompt = promptOf(record, keys);
  if (prompt instanceof Skip) return prompt;
  const answer = scalar(lookup(record, keys.answer_key));
  if (prompt === undefined || answer === undefined) {
    const promptKeys = keys.messages_key === undefined ? `"${keys.prompt_key}"` : `"${keys.messages_key}" or "${keys.prompt_key}"`;
    return new Skip('missing_field', `needs string fields ${promptKeys} and "${keys.answer_key}"`);
  }
  const id = keys.id_key === undefined ? undefined : scalar(lookup(record, keys.id_key));
  if (id !== undefined) {
    const first = seenIds.get(id);
    if (first !== undefined) return new Skip('duplicate_id', `duplicate ${keys.id_key} ${JSON.stringify(id)} (first on ${first}); the first row is kept`);
    seenIds.set(id, at);
  }
  return { ...prompt, answer, domain: scalar(lookup(record, keys.domain_key)) ?? keys.default_domain };
}
