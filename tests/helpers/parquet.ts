/**
 * Parquet fixtures for tests, written by pyarrow (write_parquet.py) exactly as
 * verl's preprocessing writes them, so the reader is tested against the files
 * users bring rather than against what our own code would write.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** Writes `rows` to `file` as parquet (snappy, as verl's files are, unless `compression` says otherwise); returns pyarrow's schema of the table. */
export function writeParquet(file: string, rows: Record<string, unknown>[], compression = 'snappy'): string {
  const r = spawnSync(path.join(ROOT, '.venv/bin/python'), [path.join(__dirname, 'write_parquet.py'), file, compression], { input: JSON.stringify(rows), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`write_parquet.py failed: ${r.stderr}`);
  return r.stdout;
}

/** A row as verl's gsm8k.py writes it: the prompt as chat messages, the answer under reward_model. */
export function verlRow(index: number, messages: { role: string; content: string | null }[] | null, groundTruth: string | null, dataSource = 'openai/gsm8k'): Record<string, unknown> {
  return {
    data_source: dataSource,
    prompt: messages,
    ability: 'math',
    reward_model: { style: 'rule', ground_truth: groundTruth },
    extra_info: { split: 'train', index, answer: groundTruth, question: messages?.at(-1)?.content ?? null },
  };
}
