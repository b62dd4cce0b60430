/**
 * dataset: a single-turn task read from a file, one prompt per row: JSON
 * lines ({"prompt": "...", "answer": "...", "domain": "math"}) or parquet
 * (verl's columns), with key names per preset (rollflow, verl, roll) or set
 * one by one (dataset-keys.ts). A prompt is text or a list of chat messages
 * (system + user …), which reaches generation as it is (EnvReset.messages).
 * Training episode `seed` serves training row `seed mod N`, validation seeds
 * (VAL_SEED_BASE + i) the held-out rows (`holdout`), or every row of a
 * dataset env only validation uses. The reply is scored by the env server's
 * verifier for the row's domain (math_verify, exact_match, code_exec), or by
 * `verifier` when set.
 *
 * With domain_interleave_probs (set by the run config) the training rows are
 * grouped by domain and the index reports each domain's rows, so the run can
 * deal each step's groups to the domains in their shares (dataset-domains.ts).
 *
 * A row that cannot be served (bad JSON or UTF-8, a missing field, bad chat
 * messages, a repeated id, a row above max_row_bytes) never stops a run:
 * `index` reports and counts it, and it is skipped (dataset-rows.ts,
 * dataset-parquet.ts), so the dataset is the valid rows in file order. The
 * run loads this index through an activity at its start and takes its size
 * as the dataset size. A file that cannot be read, is not of its format or
 * has no valid row is an EnvConfigError, which fails the run at its start.
 */
import { readFile, stat } from 'node:fs/promises';
import { z } from 'zod';
import { EngineRejectedError, type EnvClient } from '../gpu-bridge';
import type { Env } from './env';
import { parseRows, type DatasetIndex, type DatasetRow } from './dataset-rows';
import { NotParquetError, parseParquetRows } from './dataset-parquet';
import { DATASET_FORMATS, DATASET_PRESETS, resolveFormat, resolveKeys } from './dataset-keys';
import { formatProblem } from '../configs/errors';
import { parseEnvConfig } from './env-config';
import { checkNamedDomains, groupByDomain } from './dataset-domains';
import { EnvConfigError, RewardUnscoredError } from './errors';
import { epochOrder, VAL_SEED_BASE } from '../core';

const Config = z.strictObject({
  path: z.string().min(1).describe('The dataset file, one row per prompt (absolute, or relative to the worker\'s working directory).'),
  format: z.enum(DATASET_FORMATS).default('auto').describe('jsonl (JSON lines) or parquet; auto: parquet for a path ending in .parquet, else jsonl.'),
  preset: z
    .enum(DATASET_PRESETS)
    .optional()
    .describe('Key names as a framework writes them: rollflow (prompt, answer, domain, id), verl (prompt, reward_model.ground_truth, data_source, no id), roll (messages or prompt, ground_truth, tag, id). Default: verl for parquet, rollflow for jsonl. A key set below wins.'),
  prompt_key: z.string().min(1).optional().describe('Row field holding the prompt: text, or a list of chat messages {role, content}. Keys may be dotted paths into nested fields.'),
  messages_key: z.string().min(1).optional().describe('Row field holding the prompt as chat messages, a list or a JSON string of one (ROLL\'s messages); read before prompt_key, which serves rows without it.'),
  answer_key: z.string().min(1).optional().describe('Row field holding the reference answer (e.g. reward_model.ground_truth).'),
  domain_key: z.string().min(1).optional().describe('Row field naming the domain that picks the verifier (e.g. data_source, tag).'),
  default_domain: z.string().min(1).default('math').describe('Domain of rows without a domain field.'),
  verifier: z.string().min(1).optional().describe('Score every row with this verifier (exact_match | math_verify | code_exec | llm_judge) instead of its domain\'s.'),
  domain_rewards: z
    .record(z.string().min(1), z.strictObject({ verifier: z.string().min(1), config: z.record(z.string(), z.unknown()).optional() }))
    .optional()
    .describe('Each domain\'s verifier and its settings; the run config\'s `rewards` (type, tag_included, config) sets it, as ROLL routes samples to reward workers by domain tag. A row whose domain no entry names fails the run at its start.'),
  verifier_config: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('Settings sent with every reply to its verifier, which validates them (e.g. code_exec: { mode: fraction }); a key it does not know fails the first reward with a 400 naming config.<key>.'),
  holdout: z
    .union([z.number().int().min(1), z.number().gt(0).lt(1)])
    .optional()
    .describe('Rows kept out of training for validation: a count, or a share of the valid rows, chosen by a fixed seeded shuffle (the same file gives the same split). Training seeds then serve the other rows only and validation seeds (val_env_manager) these only. A dataset env that both trains and validates needs it.'),
  domain_interleave_probs: z
    .record(z.string().min(1), z.number().min(0))
    .optional()
    .describe('Set from the run config\'s domain_interleave_probs (not here): training rows are ordered by domain (names sorted, then file order), the index reports each domain\'s training rows, and a domain it names that the training rows lack fails the run at its start.'),
  id_key: z.string().min(1).optional().describe('Row field holding a row\'s id, where rows have one: a repeated id is reported and its later rows skipped.'),
  max_row_bytes: z
    .number()
    .int()
    .min(1)
    .default(256 * 1024)
    .describe('Longest row (its line, in bytes; a parquet row as JSON) the index keeps; a longer one is reported and skipped. Its prompt travels in activity payloads, which Temporal warns about at 512 KiB and rejects at 2 MB.'),
});

/** The config with its format and key names resolved (dataset-keys.ts). */
export type DatasetConfig = Omit<z.output<typeof Config>, 'format'> & ReturnType<typeof resolveKeys> & { format: 'jsonl' | 'parquet' };

function resolveConfig(parsed: z.output<typeof Config>): DatasetConfig {
  const format = resolveFormat(parsed.format, parsed.path);
  const { prompt_key, messages_key, answer_key, domain_key, id_key } = parsed;
  return { ...parsed, format, ...resolveKeys(parsed.preset, format, { prompt_key, messages_key, answer_key, domain_key, id_key }) };
}

export interface DatasetState {
  row: number;
}

/** Which rows training and validation seeds serve: with a holdout, two disjoint sets; without, both every row. */
interface Split {
  train: number[];
  validation: number[];
}

/** The holdout's rows: the last k of a shuffle with a fixed seed, so a file always splits the same way. */
const HOLDOUT_SHUFFLE_SEED = 0x5eed;

function split(size: number, holdout: number | undefined): Split {
  const all = Array.from({ length: size }, (_, i) => i);
  if (holdout === undefined) return { train: all, validation: all };
  // A share keeps at least one row on each side; a count is checked against the file by load().
  const k = holdout < 1 ? Math.min(size - 1, Math.max(1, Math.round(holdout * size))) : holdout;
  const order = epochOrder(size, HOLDOUT_SHUFFLE_SEED, 0);
  const byRow = (a: number, b: number) => a - b;
  return { train: order.slice(0, size - k).sort(byRow), validation: order.slice(size - k).sort(byRow) };
}

// One parse per file version and worker process: every episode reads from it.
const loaded = new Map<string, { mtimeMs: number; rows: DatasetRow[]; index: DatasetIndex; split: Split }>();

async function load(config: DatasetConfig) {
  const key = JSON.stringify([config.path, config.format, config.prompt_key, config.messages_key, config.answer_key, config.domain_key, config.default_domain, config.id_key, config.max_row_bytes, config.holdout, config.domain_interleave_probs !== undefined]);
  const file = await stat(config.path).catch(unreadable(config));
  if (!file.isFile()) throw pathError(config.path, `${fileKind(config)}, not a directory or other non-file`);
  const cached = loaded.get(key);
  if (cached?.mtimeMs === file.mtimeMs) return cached;
  const bytes = await readFile(config.path).catch(unreadable(config));
  const { rows, index } = config.format === 'parquet' ? await parseParquetRows(bytes, config).catch(notParquet(config)) : parseRows(bytes, config);
  if (index.size === 0) {
    const { malformed, problems } = index;
    throw pathError(config.path, malformed ? `a file with at least one valid row; all ${malformed} rows were skipped (${problems.join('; ')})` : 'a file with at least one row; it is empty');
  }
  if (config.holdout !== undefined && index.size < 2) throw holdoutError(config, `a file with at least 2 valid rows to split; it has ${index.size}`);
  if (config.holdout !== undefined && config.holdout >= index.size) throw holdoutError(config, `fewer rows than the file's ${index.size} valid ones (at least one must train)`);
  const rowSplit = split(rows.length, config.holdout);
  // Interleaved by domain, training seed s is the s-th row of the rows grouped by domain (dataset-domains.ts).
  const grouped = config.domain_interleave_probs ? groupByDomain(rows, rowSplit.train) : undefined;
  if (grouped) rowSplit.train = grouped.train;
  // The run's dataset size is what training visits: the rows not held out.
  const sizes = { size: rowSplit.train.length, ...(config.holdout !== undefined ? { heldOut: rowSplit.validation.length } : {}), ...(grouped ? { domains: grouped.domains } : {}) };
  const parsed = { mtimeMs: file.mtimeMs, rows, index: { ...index, ...sizes }, split: rowSplit };
  loaded.set(key, parsed);
  return parsed;
}

/** The verifier and settings for a row of `domain`: `verifier` for every row, else the domain's route, else the env server's own mapping. */
function scoring(config: DatasetConfig, domain: string): { verifier?: string; config?: Record<string, unknown> } {
  if (config.verifier) return { verifier: config.verifier, ...(config.verifier_config ? { config: config.verifier_config } : {}) };
  const route = config.domain_rewards?.[domain];
  if (config.domain_rewards && !route) throw new RewardUnscoredError(`no reward routes domain "${domain}" (rewards.*.tag_included names ${Object.keys(config.domain_rewards).join(', ')})`);
  return route ? { verifier: route.verifier, ...(route.config ? { config: route.config } : {}) } : {};
}

/** With domain_rewards, every domain of the file must have a route: found at the run's start, not one unscored sample at a time. */
function checkRoutes(config: DatasetConfig, rows: DatasetRow[]): void {
  if (!config.domain_rewards || config.verifier) return;
  const missing = [...new Set(rows.map((r) => r.domain))].filter((d) => !(d in config.domain_rewards!));
  if (missing.length === 0) return;
  const expected = `a reward whose tag_included names every domain of ${config.path}; these have none (routed now: ${Object.keys(config.domain_rewards).join(', ')})`;
  throw new EnvConfigError(`dataset:\n${formatProblem({ path: 'rewards', given: missing, expected })}`, [{ path: 'rewards', given: missing, expected }]);
}

const holdoutError = (config: DatasetConfig, expected: string) =>
  new EnvConfigError(`dataset:\n${formatProblem({ path: 'config.holdout', given: config.holdout, expected })}`, [{ path: 'holdout', given: config.holdout, expected }]);

const pathError = (given: string, expected: string) => new EnvConfigError(`dataset:\n${formatProblem({ path: 'config.path', given, expected })}`, [{ path: 'path', given, expected }]);
const fileKind = (config: DatasetConfig, adjective = '') => `a ${adjective}${config.format === 'parquet' ? 'parquet' : 'JSON-lines'} file`;
const unreadable = (config: DatasetConfig) => (e: NodeJS.ErrnoException): never => {
  throw pathError(config.path, `${fileKind(config, 'readable ')} (${e.code === 'ENOENT' ? 'it does not exist' : (e.code ?? e.message)})`);
};
const notParquet = (config: DatasetConfig) => (e: unknown): never => {
  if (!(e instanceof NotParquetError)) throw e;
  throw pathError(config.path, e.expected);
};

export function dataset(client: EnvClient): Env<DatasetState, DatasetConfig> & { index(config: DatasetConfig): Promise<DatasetIndex> } {
  return {
    name: 'dataset',

    parseConfig: (raw) => resolveConfig(parseEnvConfig('dataset', Config, raw)),

    async index(config) {
      const { rows, index } = await load(config);
      checkRoutes(config, rows);
      if (config.domain_interleave_probs) checkNamedDomains(config.domain_interleave_probs, index.domains ?? [], config.path);
      return index;
    },

    async reset(config, seed) {
      const { rows, split } = await load(config);
      // Validation seeds never reach a training row when there is a holdout, nor training seeds a held-out one.
      const serves = seed >= VAL_SEED_BASE ? split.validation : split.train;
      const row = serves[(seed >= VAL_SEED_BASE ? seed - VAL_SEED_BASE : seed) % serves.length]!;
      const { prompt, messages } = rows[row]!;
      return { state: { row }, observation: prompt, ...(messages ? { messages } : {}), info: { row } };
    },

    async step(config, state, action, signal) {
      const { rows } = await load(config);
      const row = rows[state.row % rows.length]!;
      const scored = await client
        .reward({ domain: row.domain, prompt: row.prompt, response: action, reference: row.answer, ...scoring(config, row.domain) }, { signal })
        .catch((e: unknown) => Promise.reject(e instanceof EngineRejectedError && e.code === 'reward_unscored' ? new RewardUnscoredError(e.message) : e));
      return { state, observation: '', reward: scored.reward, done: true, info: { row: state.row, ...scored.info } };
    },
  };
}
