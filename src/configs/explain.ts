/** Turns zod issues into ConfigProblems a person can act on: path, given value, expectation, nearest known key. */
import { closest, distance } from 'fastest-levenshtein';
import type { z } from 'zod';
import type { ConfigProblem } from './errors';

type Issue = z.core.$ZodIssue;
type Key = PropertyKey;

export function pathString(path: readonly Key[]): string {
  return path.reduce<string>((s, k) => (typeof k === 'number' ? `${s}[${k}]` : s ? `${s}.${String(k)}` : String(k)), '');
}

function valueAt(root: unknown, path: readonly Key[]): unknown {
  let v: unknown = root;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<Key, unknown>)[k];
  }
  return v;
}

/** The keys an object schema at `path` accepts, looking through wrappers, arrays and records. */
export function knownKeysAt(schema: z.ZodType, path: readonly Key[]): string[] {
  type Def = { type: string; innerType?: z.core.$ZodType; in?: z.core.$ZodType };
  let s: z.core.$ZodType | undefined = schema;
  const unwrap = () => {
    for (;;) {
      const def = s?._zod.def as Def | undefined;
      if (def?.innerType) s = def.innerType;
      else if (def?.type === 'pipe' && def.in) s = def.in;
      else return;
    }
  };
  for (const k of path) {
    unwrap();
    const def = s?._zod.def as { type: string; shape?: Record<string, z.core.$ZodType>; element?: z.core.$ZodType; valueType?: z.core.$ZodType };
    if (def.type === 'object') s = def.shape?.[String(k)];
    else if (def.type === 'array') s = def.element;
    else if (def.type === 'record') s = def.valueType;
    else return [];
  }
  unwrap();
  const def = s?._zod.def as { type: string; shape?: Record<string, unknown> } | undefined;
  return def?.type === 'object' && def.shape ? Object.keys(def.shape) : [];
}

export function suggestKey(unknown: string, known: string[]): string | undefined {
  if (known.length === 0) return undefined;
  const best = closest(unknown, known);
  return distance(unknown, best) <= Math.max(2, Math.floor(best.length / 3)) ? best : undefined;
}

function expectation(issue: Issue): string {
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${issue.expected}`;
    case 'too_small':
    case 'too_big': {
      const op = issue.code === 'too_small' ? (issue.inclusive ? '>=' : '>') : issue.inclusive ? '<=' : '<';
      const bound = issue.code === 'too_small' ? issue.minimum : issue.maximum;
      if (issue.origin === 'array') return `expected ${issue.code === 'too_small' ? 'at least' : 'at most'} ${bound} item(s)`;
      if (issue.origin === 'string') return `expected a string of length ${op} ${bound}`;
      return `expected a ${issue.origin === 'int' ? 'whole number' : issue.origin} ${op} ${bound}`;
    }
    case 'invalid_value':
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_format':
      return `expected ${issue.format === 'regex' ? `a value matching ${issue.message}` : `a valid ${issue.format}`}`;
    case 'invalid_union':
      // Each alternative once prefixed; an alternative's issue inside the value (a list's item) says where.
      return 'expected ' + issue.errors.map((branch) => branch.map((i) => expectation(i).replace(/^expected /, '') + (i.path.length > 0 ? ` at ${pathString(i.path)}` : '')).join(' and ')).join(', or ');
    case 'not_multiple_of':
      return `expected a multiple of ${issue.divisor}`;
    default:
      return issue.message;
  }
}

export function explainIssues(issues: readonly Issue[], input: unknown, schema: z.ZodType): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      const known = knownKeysAt(schema, issue.path);
      for (const key of issue.keys) {
        const hint = suggestKey(key, known);
        const path = [...issue.path, key];
        problems.push({
          path: pathString(path),
          given: valueAt(input, path),
          expected: `unknown key${hint ? `; did you mean "${hint}"?` : ''} (known here: ${known.join(', ')})`,
        });
      }
      continue;
    }
    problems.push({ path: pathString(issue.path), given: valueAt(input, issue.path), expected: expectation(issue) });
  }
  return problems;
}
