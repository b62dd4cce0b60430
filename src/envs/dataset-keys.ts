/**
 * Which file format a dataset is and which fields hold its prompt, answer,
 * domain and id. A preset names the fields as each framework writes them; a
 * key set in env_config wins over its preset.
 *
 * - rollflow: {"prompt", "answer", "domain", "id"}.
 * - verl (examples/data_preprocess/*.py): `prompt` a list of chat messages,
 *   the answer in reward_model.ground_truth, the domain its data_source (what
 *   verl's default_compute_score dispatches on), and no id: extra_info.index
 *   counts rows within one source's split, so files that concatenate sources
 *   repeat it (id_key: extra_info.index checks it where it is unique).
 * - roll (ROLL's RLVR data): `messages` a list of chat messages or a JSON
 *   string of one, read before `prompt` (as ROLL's encode_function), the
 *   answer in ground_truth, the domain its `tag` (what rewards.*.tag_included
 *   names), the id `id`.
 */
export const DATASET_FORMATS = ['auto', 'jsonl', 'parquet'] as const;
export const DATASET_PRESETS = ['rollflow', 'verl', 'roll'] as const;
export type DatasetPreset = (typeof DATASET_PRESETS)[number];

export interface KeyNames {
  prompt_key: string;
  messages_key?: string;
  answer_key: string;
  domain_key: string;
  id_key?: string;
}

export const PRESET_KEYS: Record<DatasetPreset, KeyNames> = {
  rollflow: { prompt_key: 'prompt', answer_key: 'answer', domain_key: 'domain', id_key: 'id' },
  verl: { prompt_key: 'prompt', answer_key: 'reward_model.ground_truth', domain_key: 'data_source' },
  roll: { prompt_key: 'prompt', messages_key: 'messages', answer_key: 'ground_truth', domain_key: 'tag', id_key: 'id' },
};

/** `auto`: a path ending in .parquet is parquet, any other is JSON lines. */
export function resolveFormat(format: (typeof DATASET_FORMATS)[number], path: string): 'jsonl' | 'parquet' {
  if (format !== 'auto') return format;
  return path.toLowerCase().endsWith('.parquet') ? 'parquet' : 'jsonl';
}

/** The keys in use: the preset's (by default verl's for parquet, rollflow's for JSON lines), each overridden where set. */
export function resolveKeys(preset: DatasetPreset | undefined, format: 'jsonl' | 'parquet', set: Partial<KeyNames>): KeyNames {
  const base = PRESET_KEYS[preset ?? (format === 'parquet' ? 'verl' : 'rollflow')];
  const given = Object.fromEntries(Object.entries(set).filter(([, v]) => v !== undefined)) as Partial<KeyNames>;
  return { ...base, ...given };
}
