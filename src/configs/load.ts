/** Reads a run config from YAML plus `--set key.path=value` overrides and validates it: all or nothing. */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument, parse as parseYamlScalar } from 'yaml';
import { derive, type Derived } from './derive';
import { ConfigError, type ConfigProblem } from './errors';
import { explainIssues } from './explain';
import { RunConfigSchema, type RunConfig } from './schema';

export interface LoadedConfig {
  config: RunConfig;
  derived: Derived;
  /** Where it came from: a file path, or "(defaults)". */
  source: string;
  /** sha256 of the validated config; checkpoints record it. */
  hash: string;
}

export function parseConfig(raw: unknown, source: string, cwd = process.cwd()): LoadedConfig {
  const result = RunConfigSchema.safeParse(raw ?? {});
  if (!result.success) throw new ConfigError(source, explainIssues(result.error.issues, raw, RunConfigSchema));
  const config = result.data;
  return { config, derived: derive(config, cwd, path), source, hash: sha256(stableJson(config)) };
}

/** Loads `file` (or the defaults when undefined), applies overrides, validates. Throws ConfigError. */
export function loadConfig(file: string | undefined, overrides: readonly string[] = [], cwd = process.cwd()): LoadedConfig {
  return withOverrides(file ? readYaml(file) : {}, file ?? '(defaults)', overrides, cwd);
}

/** A config given as an object (the client library's start), with the same overrides and checks as a file. */
export function loadConfigObject(config: Record<string, unknown>, overrides: readonly string[] = [], source = '(config object)', cwd = process.cwd()): LoadedConfig {
  return withOverrides(structuredClone(config), source, overrides, cwd);
}

function withOverrides(raw: Record<string, unknown>, source: string, overrides: readonly string[], cwd: string): LoadedConfig {
  const problems: ConfigProblem[] = [];
  for (const o of overrides) {
    const problem = applyOverride(raw, o);
    if (problem) problems.push(problem);
  }
  if (problems.length) throw new ConfigError(source, problems);
  return parseConfig(raw, source, cwd);
}

function readYaml(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(file, [{ path: '', given: file, expected: `a readable file (${(e as NodeJS.ErrnoException).code})` }]);
  }
  const doc = parseDocument(text);
  if (doc.errors.length) {
    throw new ConfigError(
      file,
      doc.errors.map((e) => ({ path: `line ${e.linePos?.[0]?.line ?? '?'}, column ${e.linePos?.[0]?.col ?? '?'}`, given: undefined, expected: `valid YAML: ${e.message.split('\n')[0]}` })),
    );
  }
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(file, [{ path: '', given: value, expected: 'a mapping of config keys at the top level' }]);
  }
  return value as Record<string, unknown>;
}

/**
 * Applies "a.b[0].c=value" to `raw` in place; the value is read as YAML, so
 * numbers, booleans and lists keep their types. Returns a problem or undefined.
 */
export function applyOverride(raw: Record<string, unknown>, override: string): ConfigProblem | undefined {
  const eq = override.indexOf('=');
  const keyPath = eq > 0 ? override.slice(0, eq) : '';
  const keys = keyPath.split(/\.|\[(\d+)\]/).filter((k): k is string => k !== undefined && k !== '');
  if (eq <= 0 || keys.length === 0) return { path: '--set', given: override, expected: 'key.path=value, e.g. async_generation_ratio=2' };
  let node: Record<string, unknown> = raw;
  for (const [i, key] of keys.slice(0, -1).entries()) {
    const next = node[key];
    if (next === undefined || next === null) node[key] = /^\d+$/.test(keys[i + 1] ?? '') ? [] : {};
    else if (typeof next !== 'object') return { path: keys.slice(0, i + 1).join('.'), given: next, expected: `a mapping, to set ${keyPath}` };
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1] as string] = parseYamlScalar(override.slice(eq + 1));
  return undefined;
}

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
