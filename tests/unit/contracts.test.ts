// Every fixture in contracts/ parses with the zod schema of its name, and every
// schema has a fixture: the TypeScript half of the TS <-> Python contract check.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTRACTS } from '../../src/gpu-bridge/contracts';

const root = path.join(__dirname, '../../contracts');

describe.each(Object.entries(CONTRACTS))('%s contracts', (role, schemas) => {
  const files = readdirSync(path.join(root, role)).filter((f) => f.endsWith('.json'));
  const typeOf = (file: string) => file.split('.')[0] as string;

  it('has a schema for every fixture', () => {
    expect(files.map(typeOf).filter((t) => !(t in schemas))).toEqual([]);
  });

  it('has a fixture for every schema', () => {
    expect(Object.keys(schemas).filter((t) => !files.some((f) => typeOf(f) === t))).toEqual([]);
  });

  it.each(files)('parses %s', (file) => {
    const schema = schemas[typeOf(file)];
    const fixture: unknown = JSON.parse(readFileSync(path.join(root, role, file), 'utf8'));
    const result = schema?.safeParse(fixture);
    expect(result?.success, JSON.stringify(result?.error?.issues)).toBe(true);
  });
});
