/**
 * Invalid run configs generated from the schema itself (fast-check), each
 * with the config path its problem must be reported at. A valid, runnable
 * base config (every key filled in) is broken in one place: a value its key's
 * own schema rejects (wrong type, out of range, a bad enum value or format),
 * an unknown key in an object, a required key removed, or a reference
 * between keys broken. Shared by the library-path test (tests/unit) and the
 * CLI test (tests/integration).
 */
import fc from 'fast-check';
import type { z } from 'zod';
import { parseConfig, RunConfigSchema } from '../../src/configs';
import { pathString } from '../../src/configs/explain';

type Key = string | number;

/** Runnable; it uses every part of the schema that has parts (managers, envs, rewards, algorithm settings, worker limits). */
export const BASE_CONFIG = {
  exp_name: 'invalid-configs',
  max_steps: 2,
  eval_steps: 1,
  async_generation_ratio: 1,
  pg_clip: 0.2,
  pg_clip_low: 0.2,
  cispo_epsilon_low: 0.1,
  train_infer_correction: { is_weight: { enabled: true } },
  actor_train: { model_args: { model_name_or_path: 'tiny:default' }, training_args: { learning_rate: 1e-5, gradient_accumulation_steps: 2 } },
  actor_infer: { model_args: { model_name_or_path: 'tiny:default' }, generating_args: { max_new_tokens: 8 } },
  train_env_manager: { num_env_groups: 2, group_size: 2, trajectories_per_step: 2, tags: ['slow', 'arith'], num_groups_partition: [1, 1] },
  val_env_manager: { num_env_groups: 1, group_size: 1, tags: ['arith'] },
  custom_envs: {
    slow: { env_type: 'latency_sim', max_steps: 2, max_tokens_per_step: 4, max_tokens_per_episode: 6, env_config: { turns: 2 } },
    arith: { env_type: 'arithmetic', env_config: { max_operand: 9 } },
    rows: { env_type: 'dataset', env_config: { path: 'rows.jsonl' } },
  },
  rewards: { exact: { type: 'exact_match', tag_included: ['exact'] } },
  temporal: {
    worker: { max_concurrent_workflow_tasks: 4, max_cached_workflows: 10, non_sticky_poll_ratio: 1, metrics_address: '127.0.0.1:9464' },
    codec_url: 'http://127.0.0.1:8234',
    // Parsed only: no connection is made, so the files need not exist. TLS is for a server of one's own, not the embedded one.
    embedded: false,
    tls: { ca_file: 'ca.pem', cert_file: 'client.pem', key_file: 'client.key', server_name: 'temporal.test' },
    api_key_file: 'api.key',
    encryption: { key_file: 'payload.key' },
  },
  track_with: ['tensorboard', 'stdout'],
  tracker_kwargs: { log_dir: 'tb', project: 'p', name: 'n', notes: 'x', tags: ['a'] },
  engines: { inference: [{ url: 'http://127.0.0.1:8301', options: { max_batch: 4 } }], judge: { url: 'http://127.0.0.1:8302', options: { model: 'tiny:default' } } },
  sample_store: { path: 'samples' },
  run_dir: 'runs/invalid-configs',
};

/** One break of a valid config, and the config path its problem must be reported at. */
export interface Break {
  /** Makes the break in a copy of FULL_CONFIG. */
  apply(raw: Record<string, unknown>): void;
  /** What was broken, for a failing case's report. */
  what: string;
  /** The reported problem's path: exactly this, or (`exact` false: a value was replaced) a path inside it. */
  path: string;
  exact: boolean;
}

type Def = { type: string; innerType?: z.core.$ZodType; in?: z.core.$ZodType; shape?: Record<string, z.core.$ZodType>; element?: z.core.$ZodType; valueType?: z.core.$ZodType };
const defOf = (s: z.core.$ZodType) => s._zod.def as Def;
const WRAPPERS = ['optional', 'default', 'prefault', 'nullable', 'readonly', 'catch'];

function unwrap(s: z.core.$ZodType): z.core.$ZodType {
  for (;;) {
    const d = defOf(s);
    if (d.innerType && WRAPPERS.includes(d.type)) s = d.innerType;
    else if (d.type === 'pipe' && d.in) s = d.in;
    else return s;
  }
}
const isOptional = (s: z.core.$ZodType) => WRAPPERS.slice(0, 3).includes(defOf(s).type);

interface Site {
  path: Key[];
  schema: z.core.$ZodType;
  /** An object key the schema requires (no default, not optional). */
  required: boolean;
}

/** Every key and element of `value` the schema knows, with its own schema; and every object (unknown keys go there). */
function sitesOf(schema: z.core.$ZodType, value: unknown, path: Key[] = [], sites: Site[] = [], objects: Key[][] = []) {
  const d = defOf(unwrap(schema));
  const child = (s: z.core.$ZodType, v: unknown, at: Key[], required: boolean) => {
    sites.push({ path: at, schema: s, required });
    sitesOf(s, v, at, sites, objects);
  };
  if (d.type === 'object' && d.shape) {
    objects.push(path);
    for (const [k, s] of Object.entries(d.shape)) child(s, (value as Record<string, unknown> | undefined)?.[k], [...path, k], !isOptional(s));
  } else if (d.type === 'array' && d.element && Array.isArray(value)) {
    value.forEach((v, i) => child(d.element!, v, [...path, i], false));
  } else if (d.type === 'record' && d.valueType && value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) child(d.valueType, v, [...path, k], false);
  }
  return { sites, objects };
}

/** The base with every default filled in, so every key of the schema is there to break. */
export const FULL_CONFIG = parseConfig(BASE_CONFIG, 'base', '/work').config as unknown as Record<string, unknown>;
const { sites: SITES, objects: OBJECTS } = sitesOf(RunConfigSchema, FULL_CONFIG);
// Values of z.unknown() (engine options, env_config) are checked by their engine or env, not here.
const VALUE_SITES = SITES.filter((s) => !['unknown', 'any'].includes(defOf(unwrap(s.schema)).type));
const REQUIRED_SITES = SITES.filter((s) => s.required);

const clone = <T>(v: T): T => structuredClone(v);
function setAt(root: Record<string, unknown>, path: Key[], value: unknown): void {
  let node = root as Record<Key, unknown>;
  for (const k of path.slice(0, -1)) node = node[k] as Record<Key, unknown>;
  node[path[path.length - 1]!] = value;
}
function deleteAt(root: Record<string, unknown>, path: Key[]): void {
  let node = root as Record<Key, unknown>;
  for (const k of path.slice(0, -1)) node = node[k] as Record<Key, unknown>;
  delete node[path[path.length - 1]!];
}
const at = (path: Key[]) => pathString(path);

/** Candidate values of every JSON type, plus the bounds just outside a number's range. */
function candidates(schema: z.core.$ZodType): fc.Arbitrary<unknown> {
  const leaf = unwrap(schema) as z.core.$ZodType & { minValue?: number | null; maxValue?: number | null };
  const edges = [leaf.minValue, leaf.maxValue].flatMap((b) => (typeof b === 'number' && Number.isFinite(b) ? [b - 1, b + 1, b + 0.5] : []));
  const json = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.integer({ min: -1e6, max: 1e6 }),
    fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.integer({ min: -3, max: 3 }), { maxLength: 3 }),
    fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.integer(), { maxKeys: 2 }),
    ...(edges.length ? [fc.constantFrom(...edges)] : []),
  );
  return json.filter((v) => !(schema as z.ZodType).safeParse(v).success);
}

const rejectedValue = fc
  .constantFrom(...VALUE_SITES)
  .chain((site) => candidates(site.schema).map((v): Break => ({ apply: (raw) => setAt(raw, site.path, v), what: `${at(site.path)} = ${JSON.stringify(v)}`, path: at(site.path), exact: false })));

const unknownKey = fc
  .tuple(fc.constantFrom(...OBJECTS), fc.stringMatching(/^[a-z][a-z_]{1,14}$/), fc.jsonValue({ maxDepth: 1 }))
  .map(([objectPath, name, v]): Break => {
    const path = [...objectPath, `x_${name}`]; // the prefix keeps it off every known key
    return { apply: (raw) => setAt(raw, path, v), what: `unknown key ${at(path)}`, path: at(path), exact: true };
  });

const missingKey = fc.constantFrom(...REQUIRED_SITES).map((site): Break => ({ apply: (raw) => deleteAt(raw, site.path), what: `missing ${at(site.path)}`, path: at(site.path), exact: true }));

/** References between keys: each break names the key that refers. */
const brokenReference: fc.Arbitrary<Break> = fc.oneof(
  fc.tuple(fc.constantFrom('train_env_manager', 'val_env_manager'), fc.stringMatching(/^[a-z]{1,8}$/)).map(([m, tag]): Break => ({
    apply: (raw) => {
      setAt(raw, [m, 'tags', 0], `no_${tag}`);
      deleteAt(raw, [m, 'num_groups_partition']);
    },
    what: `${m}.tags[0] names no env`,
    path: `${m}.tags[0]`,
    exact: true,
  })),
  fc
    .array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 4 })
    .filter((p) => p.length !== 2 || p[0]! + p[1]! !== 2)
    .map((partition): Break => ({ apply: (raw) => setAt(raw, ['train_env_manager', 'num_groups_partition'], partition), what: `num_groups_partition ${JSON.stringify(partition)}`, path: 'train_env_manager.num_groups_partition', exact: true })),
  fc.integer({ min: 5, max: 1000 }).map((n): Break => ({ apply: (raw) => setAt(raw, ['train_env_manager', 'trajectories_per_step'], n), what: `trajectories_per_step ${n}`, path: 'train_env_manager.trajectories_per_step', exact: true })),
  fc
    .record({ a: fc.double({ min: 0, max: 1, noNaN: true }), b: fc.double({ min: 0, max: 1, noNaN: true }) })
    .map((shares): Break => ({ apply: (raw) => setAt(raw, ['domain_interleave_probs'], shares), what: `domain shares ${JSON.stringify(shares)} (two training envs, not one dataset env)`, path: 'domain_interleave_probs', exact: true })),
  fc
    .double({ min: 0, max: 1, noNaN: true })
    .map((share): Break => ({ apply: (raw) => setAt(raw, ['custom_envs', 'arith', 'env_config', 'domain_interleave_probs'], { a: share }), what: 'domain shares in an env_config (the run config sets them)', path: 'custom_envs.arith.env_config.domain_interleave_probs', exact: true })),
  fc.integer({ min: -1, max: 100 }).map((n): Break => ({ apply: (raw) => setAt(raw, ['train_env_manager', 'max_traj_per_env'], n), what: `max_traj_per_env ${n} (not a rollflow setting: refused)`, path: 'train_env_manager.max_traj_per_env', exact: true })),
  fc.integer({ min: 1, max: 8 }).map((n): Break => ({ apply: (raw) => setAt(raw, ['val_env_manager', 'trajectories_per_step'], n), what: `val trajectories_per_step ${n}`, path: 'val_env_manager.trajectories_per_step', exact: true })),
  fc
    .tuple(fc.constantFrom<Key[]>(['engines', 'trainer'], ['engines', 'env'], ['engines', 'inference', 0]), fc.constantFrom('10.1.2.3', 'example.org', 'engine-host'))
    .map(([engine, host]): Break => ({ apply: (raw) => setAt(raw, [...engine, 'url'], `http://${host}:8400`), what: `launched ${at(engine)} on ${host}`, path: `${at(engine)}.url`, exact: true })),
  fc.integer({ min: 1, max: 50 }).map((every): Break => ({
    apply: (raw) => {
      setAt(raw, ['eval_steps'], every);
      deleteAt(raw, ['val_env_manager']);
    },
    what: `eval_steps ${every} without val_env_manager`,
    path: 'val_env_manager',
    exact: true,
  })),
  fc.constant<Break>({ apply: (raw) => deleteAt(raw, ['train_env_manager']), what: 'a single-turn run with two custom_envs', path: 'custom_envs', exact: true }),
  fc
    .tuple(fc.constantFrom('turns', 'std_s', 'p_slow', 'time_scale'), fc.constantFrom(-1, 'x', 2.5))
    .filter(([key, v]) => !(['std_s', 'time_scale'].includes(key) && v === 2.5))
    .map(([key, v]): Break => ({ apply: (raw) => setAt(raw, ['custom_envs', 'slow', 'env_config', key], v), what: `latency_sim env_config.${key} = ${JSON.stringify(v)}`, path: `custom_envs.slow.env_config.${key}`, exact: true })),
);

/** A copy of FULL_CONFIG with `breaks` made. */
export function configWith(...breaks: Break[]): Record<string, unknown> {
  const raw = clone(FULL_CONFIG);
  for (const b of breaks) b.apply(raw);
  return raw;
}

/** One break of any kind. */
export const invalidConfig: fc.Arbitrary<Break> = fc.oneof(rejectedValue, unknownKey, missingKey, brokenReference);

const inside = (outer: string, inner: string) => inner.startsWith(`${outer}.`) || inner.startsWith(`${outer}[`);

/** Two breaks of single keys, neither inside the other: both must be reported. */
export const twoBrokenKeys = fc
  .tuple(fc.oneof(rejectedValue, unknownKey, missingKey), fc.oneof(rejectedValue, unknownKey, missingKey))
  .filter(([a, b]) => a.path !== b.path && !inside(a.path, b.path) && !inside(b.path, a.path));

/** Whether a problem's path reports the break. */
export function reports(problemPath: string, b: Pick<Break, 'path' | 'exact'>): boolean {
  return problemPath === b.path || (!b.exact && inside(b.path, problemPath));
}
