/**
 * dataset: a single-turn task read from a JSON-lines file, one prompt per
 * row ({"prompt": "...", "answer": "...", "domain": "math"}; key names are
 * configurable). Episode `seed` serves valid row `seed mod N`; the reply is
 * scored by the env server's verifier for the row's domain (math_verify,
 * exact_match, isolated there), or by `verifier` when set.
 *
 * A malformed row (bad JSON, a missing or non-string field) never stops a
 * run: `index` reports and counts it, and it is skipped, so the dataset is
 * the valid rows in file order. The run loads this index through an activity
 * at its start and takes its size as the dataset size.
 */
import { readFile, stat } from 'node:fs/promises';
import { z } from 'zod';
import type { EnvClient } from '../gpu-bridge';
import type { Env } from './env';
import { parseEnvConfig } from './env-config';
import { EnvConfigError } from './errors';

const Config = z.strictObject({
  path: z.string().min(1).describe('JSON-lines file, one row per prompt (absolute, or relative to the worker\'s working directory).'),
  prompt_key: z.string().min(1).default('prompt').describe('Row field holding the prompt text.'),
  answer_key: z.string().min(1).default('answer').describe('Row field holding the reference answer.'),
  domain_key: z.string().min(1).default('domain').describe('Row field naming the domain that picks the verifier.'),
  default_domain: z.string().min(1).default('math').describe('Domain of rows without a domain field.'),
  verifier: z.string().min(1).optional().describe('Score every row with this verifier (exact_match | math_verify) instead of its domain\'s.'),
});
export type DatasetConfig = z.output<typeof Config>;

export interface DatasetRow {
  prompt: string;
  answer: string;
  domain: string;
}

export interface DatasetIndex {
  /** Valid rows: the dataset size. */
  size: number;
  malformed: number;
  /** The first few problems, `line N: why`. */
  problems: string[];
}

export interface DatasetState {
  row: number;
}

const REPORTED_PROBLEMS = 10;

/** Parses the file's rows; pure, so it is tested without a file. */
export function parseRows(text: string, config: DatasetConfig): { rows: DatasetRow[]; index: DatasetIndex } {
  const rows: DatasetRow[] = [];
  const problems: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const where = `line ${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      problems.push(`${where}: not JSON (${(e as Error).message})`);
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push(`${where}: expected a JSON object`);
      return;
    }
    const row = value as Record<string, unknown>;
    const field = (key: string) => (typeof row[key] === 'string' || typeof row[key] === 'number' ? String(row[key]) : undefined);
    const prompt = field(config.prompt_key);
    const answer = field(config.answer_key);
    if (prompt === undefined || answer === undefined) {
      problems.push(`${where}: needs string fields "${config.prompt_key}" and "${config.answer_key}"`);
      return;
    }
    rows.push({ prompt, answer, domain: field(config.domain_key) ?? config.default_domain });
  });
  return { rows, index: { size: rows.length, malformed: problems.length, problems: problems.slice(0, REPORTED_PROBLEMS) } };
}

// One parse per file version and worker process: every episode reads from it.
const loaded = new Map<string, { mtimeMs: number; rows: DatasetRow[]; index: DatasetIndex }>();

async function load(config: DatasetConfig) {
  const key = JSON.stringify([config.path, config.prompt_key, config.answer_key, config.domain_key, config.default_domain]);
  let mtimeMs: number;
  try {
    mtimeMs = (await stat(config.path)).mtimeMs;
  } catch (e) {
    throw new EnvConfigError(`dataset: config.path: cannot read ${config.path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const cached = loaded.get(key);
  if (cached?.mtimeMs === mtimeMs) return cached;
  const parsed = { mtimeMs, ...parseRows(await readFile(config.path, 'utf8'), config) };
  if (parsed.index.size === 0) throw new EnvConfigError(`dataset: ${config.path} has no valid rows (${parsed.index.malformed} malformed; ${parsed.index.problems.join('; ')})`);
  loaded.set(key, parsed);
  return parsed;
}

export function dataset(client: EnvClient): Env<DatasetState, DatasetConfig> & { index(config: DatasetConfig): Promise<DatasetIndex> } {
  return {
    name: 'dataset',

    parseConfig: (raw) => parseEnvConfig('dataset', Config, raw),

    async index(config) {
      return (await load(config)).index;
    },

    async reset(config, seed) {
      const { rows } = await load(config);
      const row = seed % rows.length;
      return { state: { row }, observation: rows[row]!.prompt, info: { row } };
    },

    async step(config, state, action, signal) {
      const { rows } = await load(config);
      const row = rows[state.row % rows.length]!;
      const scored = await client.reward({ domain: row.domain, prompt: row.prompt, response: action, reference: row.answer, ...(config.verifier ? { verifier: config.verifier } : {}) }, { signal });
      return { state, observation: '', reward: scored.reward, done: true, info: { row: state.row, ...scored.info } };
    },
  };
}
