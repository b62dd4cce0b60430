/**
 * The dataset env's rows from a parquet file (verl's format: data_source,
 * prompt as a list of chat messages, ability, reward_model {style,
 * ground_truth}, extra_info), read with hyparquet. Each row goes through the
 * same record rules as a JSON line (dataset-record.ts); a row that cannot be
 * served is skipped, counted under its reason and reported as `row N`,
 * numbered from 0 as pandas and pyarrow number them (verl's extra_info.index).
 * Pages may be uncompressed or snappy (pyarrow's and pandas' default), zstd (polars'), gzip, brotli or lz4:
 * hyparquet-compressors decodes all but snappy, which hyparquet reads itself.
 */
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { rowOf, Skip, type DatasetRow, type RowKeys } from './dataset-record';
import { RowCollector, type DatasetIndex } from './dataset-rows';

/** Thrown when the bytes are not a parquet file hyparquet can read; `expected` is what config.path should have named. */
export class NotParquetError extends Error {
  override readonly name = 'NotParquetError';
  constructor(readonly expected: string) {
    super(expected);
  }
}

/** hyparquet's own message says what it could not read. */
const unreadable = (e: Error) => new NotParquetError(`a parquet file; hyparquet cannot read it: ${e.message}`);

/** A row's size as the JSON it would be (int64s as their digits), the measure max_row_bytes keeps for every format. */
const jsonBytes = (record: Record<string, unknown>) => Buffer.byteLength(JSON.stringify(record, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));

export async function parseParquetRows(bytes: Uint8Array, keys: RowKeys): Promise<{ rows: DatasetRow[]; index: DatasetIndex }> {
  let records: Record<string, unknown>[];
  try {
    // hyparquet reads an ArrayBuffer; a Node Buffer may be a view into a larger pool, so copy out exactly its bytes.
    records = await parquetReadObjects({ file: bytes.slice().buffer, compressors });
  } catch (e) {
    throw unreadable(e as Error);
  }
  const collector = new RowCollector();
  const seenIds = new Map<string, string>();
  records.forEach((record, i) => {
    const size = jsonBytes(record);
    const parsed = size > keys.max_row_bytes ? new Skip('too_large', `${size} bytes as JSON, above max_row_bytes ${keys.max_row_bytes}`) : rowOf(record, keys, seenIds, `row ${i}`);
    collector.add(parsed, `row ${i}`);
  });
  return collector.result();
}
