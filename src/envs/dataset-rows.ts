/**
 * The dataset env's rows, parsed from a JSON-lines file's bytes. A row that
 * cannot be served never stops a run and is never silently changed: it is
 * skipped, counted under its reason and reported by line (the first few).
 * Pure, so it is tested without a file.
 */

export interface DatasetRow {
  prompt: string;
  answer: string;
  domain: string;
}

/** Why a row was skipped. */
export type SkipReason = 'too_large' | 'not_utf8' | 'not_json' | 'not_object' | 'missing_field' | 'duplicate_id';

export interface DatasetIndex {
  /** Valid rows training visits: the dataset size (all valid rows, less any held out for validation). */
  size: number;
  /** Valid rows held out for validation (the dataset env's `holdout`), when set. */
  heldOut?: number;
  /** Training rows per domain, in the env's training order (only with domain_interleave_probs). */
  domains?: { name: string; rows: number }[];
  /** Rows skipped, for any reason. */
  malformed: number;
  /** The skipped rows by reason (reasons with none left out). */
  skipped: Partial<Record<SkipReason, number>>;
  /** The first few problems, `line N: why`. */
  problems: string[];
}

export interface RowKeys {
  prompt_key: string;
  answer_key: string;
  domain_key: string;
  default_domain: string;
  id_key: string;
  max_row_bytes: number;
}

const REPORTED_PROBLEMS = 10;
const NEWLINE = 0x0a;
// fatal: a byte sequence that is not UTF-8 is an error to report, not a U+FFFD to train on.
const utf8 = new TextDecoder('utf-8', { fatal: true });

class Skip {
  constructor(
    readonly reason: SkipReason,
    readonly why: string,
  ) {}
}

/** The file's lines as byte ranges, numbered from 1 (a trailing newline ends the last line, it does not start one). */
function* lines(bytes: Uint8Array): Generator<{ number: number; line: Uint8Array }> {
  let start = 0;
  for (let number = 1; start < bytes.length; number++) {
    const end = bytes.indexOf(NEWLINE, start);
    const stop = end === -1 ? bytes.length : end;
    yield { number, line: bytes.subarray(start, stop) };
    start = stop + 1;
  }
}

function parseRow(line: Uint8Array, keys: RowKeys, seenIds: Map<string, number>, number: number): DatasetRow | Skip | undefined {
  // Before decoding: a huge line is never parsed (nor quoted in an error).
  if (line.length > keys.max_row_bytes) return new Skip('too_large', `${line.length} bytes, above max_row_bytes ${keys.max_row_bytes}`);
  let text: string;
  try {
    text = utf8.decode(line);
  } catch {
    return new Skip('not_utf8', 'not valid UTF-8');
  }
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return new Skip('not_json', `not JSON (${(e as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return new Skip('not_object', 'expected a JSON object');
  const row = value as Record<string, unknown>;
  const field = (key: string) => (typeof row[key] === 'string' || typeof row[key] === 'number' ? String(row[key]) : undefined);
  const prompt = field(keys.prompt_key);
  const answer = field(keys.answer_key);
  if (prompt === undefined || answer === undefined) return new Skip('missing_field', `needs string fields "${keys.prompt_key}" and "${keys.answer_key}"`);
  const id = field(keys.id_key);
  if (id !== undefined) {
    const first = seenIds.get(id);
    if (first !== undefined) return new Skip('duplicate_id', `duplicate ${keys.id_key} ${JSON.stringify(id)} (first on line ${first}); the first row is kept`);
    seenIds.set(id, number);
  }
  return { prompt, answer, domain: field(keys.domain_key) ?? keys.default_domain };
}

export function parseRows(bytes: Uint8Array, keys: RowKeys): { rows: DatasetRow[]; index: DatasetIndex } {
  const rows: DatasetRow[] = [];
  const problems: string[] = [];
  const skipped: DatasetIndex['skipped'] = {};
  let malformed = 0;
  const seenIds = new Map<string, number>();
  for (const { number, line } of lines(bytes)) {
    const parsed = parseRow(line, keys, seenIds, number);
    if (parsed instanceof Skip) {
      malformed++;
      skipped[parsed.reason] = (skipped[parsed.reason] ?? 0) + 1;
      if (problems.length < REPORTED_PROBLEMS) problems.push(`line ${number}: ${parsed.why}`);
    } else if (parsed) {
      rows.push(parsed);
    }
  }
  return { rows, index: { size: rows.length, malformed, skipped, problems } };
}

/** One line for the operator: `N rows, M malformed rows skipped (by reason; the first problems)`. */
export function describeIndex({ size, heldOut, domains, malformed, skipped, problems }: DatasetIndex): string {
  // `skipped` is absent from indexes a run recorded before it existed.
  const reasons = Object.entries(skipped ?? {}).map(([reason, n]) => `${n} ${reason}`);
  const held = heldOut === undefined ? '' : ` (and ${heldOut} held out for validation)`;
  const byDomain = domains ? ` (by domain: ${domains.map((d) => `${d.name} ${d.rows}`).join(', ')})` : '';
  return `${size} rows${byDomain}${held}${malformed ? `, ${malformed} malformed rows skipped (${[reasons.join(', '), ...problems].filter(Boolean).join('; ')})` : ''}`;
}
