// The lint rules that keep src/ in shape must actually fire: a file over 400
// lines (every line counts, comments and blank ones too), src/core/ importing
// anything of src/ outside it (a type too), and src/core/, which the workflow
// bundle imports, touching Node built-ins or process state. Import cycles and
// upward imports between folders are tests/unit/import-layers.test.ts.
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = path.join(__dirname, '../..');
const eslint = new ESLint({ cwd: root });

async function rules(code: string, file: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

const lines = (n: number, line: (i: number) => string) => Array.from({ length: n }, (_, i) => line(i)).join('\n') + '\n';

describe('file length lint', () => {
  it('rejects a source file of 401 lines', async () => {
    expect(await rules(lines(401, (i) => `export const x${i} = ${i};`), 'src/envs/linted.ts')).toContain('max-lines');
  });

  it('counts comments and blank lines too', async () => {
    expect(await rules(lines(401, (i) => (i % 2 ? '' : '// why, not what')), 'src/envs/linted.ts')).toContain('max-lines');
  });

  it('accepts 400 lines', async () => {
    expect(await rules(lines(400, (i) => `export const x${i} = ${i};`), 'src/envs/linted.ts')).toEqual([]);
  });
});

describe('src/core/ is the floor, and workflow code', () => {
  it.each([
    ["import { run } from '../workflows/run';\nexport const x = run;", 'a value from above'],
    ["import type { RunConfig } from '../configs';\nexport type X = RunConfig;", 'a type from above'],
    ["export { METRIC } from '../workflows/step-metrics';", 'a re-export from above'],
  ])('rejects %s (%s)', async (code) => {
    expect(await rules(code, 'src/core/linted.ts')).toContain('no-restricted-imports');
  });

  it.each([
    ["import { readFileSync } from 'node:fs';\nexport const x = readFileSync;", 'a Node built-in'],
    ['export const home = process.env.HOME;', 'process'],
  ])('rejects %s (%s): the workflow bundle imports core', async (code) => {
    expect((await rules(code, 'src/core/linted.ts')).some((r) => r.includes('no-restricted'))).toBe(true);
  });

  it('accepts imports inside core and of packages', async () => {
    const code = "import { z } from 'zod';\nimport { groupUid } from './ids';\nexport const x = [z, groupUid];\n";
    expect(await rules(code, 'src/core/linted.ts')).toEqual([]);
  });
});
