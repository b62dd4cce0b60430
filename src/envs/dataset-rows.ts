/**
 * The dataset env's rows, parsed from a JSON-lines file's bytes (parquet:
 * dataset-parquet.ts; both read each record by dataset-record.ts). A row that
 * cannot be served never stops a run and is never silently changed: it is
 * skipped, counted under its reason and reported by line (the first few).
 * Pure, so it is tested without a file.
 */

import { rowOf, Skip, type DatasetRow, type RowKeys, type SkipReason } from './dataset-record';

export type { DatasetRow, RowKeys, SkipReason } from './dataset-record';

/** A domain's training rows, as the dataset index reports them (in the env's row order). */
export interface DomainRows {
  name: string;
  rows: number;
}

export interface DatasetIndex {
  /** Valid rows training visits: the dataset size (all valid rows, less any held out for validation). */
  size: number;
  /** Valid rows held out for validation (the dataset env's `holdout`), when set. */
  heldOut?: number;
  /** Training rows per domain, in the env's training order (only with domain_interleave_probs). */
  domains?: DomainRows[];
  /** Rows skipped, for any reason. */
  malformed: number;
  /** The skipped rows by reason (reasons with none left out). */
  skipped: Partial<Record<SkipReason, number>>;
  /** The first few problems, `line N: why` (JSON lines, from 1) or `row N: why` (parquet, from 0). */
  problems: string[];
}

const REPORTED_PROBLEMS = 10;
const NEWLINE = 0x0a;
// fatal: a byte sequence that is not UTF-8 is an error to report, not a U+FFFD to train on.
const utf8 = new TextDecoder('utf-8', { fatal: true });

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

function parseLine(line: Uint8Array, keys: RowKeys, seenIds: Map<string, string>, number: number): DatasetRow | Skip | undefined {
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
  return rowOf(value as Record<string, unknown>, keys, seenIds, `line ${number}`);
}

/** Rows and skips gathered in file order into the rows and the index (`where`: "line 3", "row 2"). */
export class RowCollector {
  readonly rows: DatasetRow[] = [];
  private readonly problems: string[] = [];
  private readonly skipped: DatasetIndex['skipped'] = {};
  private malformed = 0;

  add(parsed: DatasetRow | Skip | undefined, where: string): void {
    if (parsed instanceof Skip) {
      this.malformed++;
      this.skipped[parsed.reason] = (this.skipped[parsed.reason] ?? 0) + 1;
      if (this.problems.length < REPORTED_PROBLEMS) this.problems.push(`${where}: ${parsed.why}`);
    } else if (parsed) {
      this.rows.push(parsed);
    }
  }

  result(): { rows: DatasetRow[]; index: DatasetIndex } {
    return { rows: this.rows, index: { size: this.rows.length, malformed: this.malformed, skipped: this.skipped, problems: this.problems } };
  }
}

/** A JSON-lines file's rows; lines are numbered from 1. */
export function parseRows(bytes: Uint8Array, keys: RowKeys): { rows: DatasetRow[]; index: DatasetIndex } {
  const collector = new RowCollector();
  const seenIds = new Map<string, string>();
  for (const { number, line } of lines(bytes)) collector.add(parseLine(line, keys, seenIds, number), `line ${number}`);
  return collector.result();
}

/** One line for the operator: `N rows, M malformed rows skipped (by reason; the first problems)`. */
export function describeIndex({ size, heldOut, domains, malformed, skipped, problems }: DatasetIndex): string {
  // `skipped` is absent from indexes a run recorded before it existed.
  const reasons = Object.entries(skipped ?? {}).map(([reason, n]) => `${n} ${reason}`);
  const held = heldOut === undefined ? '' : ` (and ${heldOut} held out for validation)`;
  const byDomain = domains ? ` (by domain: ${domains.map((d) => `${d.name} ${d.rows}`).join(', ')})` : '';
  return `${size} rows${byDomain}${held}${malformed ? `, ${malformed} malformed rows skipped (${[reasons.join(', '), ...problems].filter(Boolean).join('; ')})` : ''}`;
}
