// The folders of src/ are layers (docs/architecture.md, "The code: the
// layers of src/"): a folder imports only folders on lower rows, so no import
// runs back up and no two folders import each other, even through a third.
// `import type` counts too: a type import still ties one folder's vocabulary
// to the other's (workflows' `import type` of activities, the Temporal idiom,
// runs downward: activities sit below workflows). The checker is a pure
// function over a map of files, so the very functions that check src/ are
// shown below to catch made-up cycles and upward imports.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = path.join(__dirname, '../../src');

/** src/'s folders (a file at the top counts as its own) from the floor up, as docs/architecture.md tables them; each imports only rows below its own. */
const LAYERS: string[][] = [
  ['core'],
  ['configs', 'gpu-bridge', 'logging.ts', 'paths.ts', 'store'],
  ['envs', 'monitoring'],
  ['trackers'],
  ['activities'],
  ['workflows'],
  ['codec'],
  ['client'],
  ['stack'],
  ['launch', 'worker'],
  ['bench', 'chaos'],
  ['cli'],
  ['index.ts'],
];

/** Source files by path under src/ ('workflows/run.ts'), with their text. */
type Files = ReadonlyMap<string, string>;

/** The folder a file under src/ belongs to: its first path segment ('paths.ts' for a file at the top). */
const folderOf = (file: string): string => file.split('/')[0]!;

/** Every module a file names: imports (type-only too), re-exports, import() calls and import('…') types. */
function specifiers(file: string, text: string): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) out.push(node.moduleSpecifier.text);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) out.push(node.moduleReference.expression.text);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) out.push(node.arguments[0].text);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) out.push(node.argument.literal.text);
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true));
  return out;
}

/** A relative specifier to the file it names (x.ts or x/index.ts), as Node resolves it; packages give undefined. */
function resolve(files: Files, from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  return [`${base}.ts`, `${base}/index.ts`, base].find((f) => files.has(f));
}

/** Imports between folders: from → to → the first file-level import that ties them ('a/x.ts -> b/y.ts'). */
export function folderImports(files: Files): Map<string, Map<string, string>> {
  const edges = new Map<string, Map<string, string>>();
  for (const [file, text] of files) {
    for (const spec of specifiers(file, text)) {
      const target = resolve(files, file, spec);
      if (!target || folderOf(target) === folderOf(file)) continue;
      const from = edges.get(folderOf(file)) ?? new Map<string, string>();
      edges.set(folderOf(file), from);
      if (!from.has(folderOf(target))) from.set(folderOf(target), `${file} -> ${target}`);
    }
  }
  return edges;
}

/** Imports between files, one folder or two: from → to → the specifier that ties them. */
export function fileImports(files: Files): Map<string, Map<string, string>> {
  const edges = new Map<string, Map<string, string>>();
  for (const [file, text] of files) {
    const to = new Map<string, string>();
    for (const spec of specifiers(file, text)) {
      const target = resolve(files, file, spec);
      if (target && target !== file && !to.has(target)) to.set(target, spec);
    }
    edges.set(file, to);
  }
  return edges;
}

/** Folders (or files) that import each other, directly or through others: the strongly connected components (Tarjan) of more than one. */
export function folderCycles(edges: Map<string, Map<string, string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      component.push(w);
    } while (w !== v);
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) connect(v);
  return cycles;
}

/** Each import that does not go to a lower row of `layers` (a row's folders may not import each other), and folders on no row. */
export function layerBreaks(edges: Map<string, Map<string, string>>, layers: string[][]): string[] {
  const row = new Map(layers.flatMap((folders, i) => folders.map((f): [string, number] => [f, i])));
  const breaks: string[] = [];
  for (const [from, targets] of edges) {
    for (const [to, example] of targets) {
      if (!row.has(from) || !row.has(to)) breaks.push(`${!row.has(from) ? from : to} is on no row of the layers (${example})`);
      else if (row.get(to)! >= row.get(from)!) breaks.push(`${from} (row ${row.get(from)}) imports ${to} (row ${row.get(to)}): ${example}`);
    }
  }
  return breaks;
}

function readSrc(): Files {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name.endsWith('.ts')) files.set(path.relative(SRC, full).split(path.sep).join('/'), readFileSync(full, 'utf8'));
    }
  };
  walk(SRC);
  return files;
}

describe('the layers of src/', () => {
  const src = readSrc();
  const edges = folderImports(src);

  it('has no import cycle between its folders', () => {
    const cycles = folderCycles(edges);
    const explain = cycles.map((c) => `${c.join(' <-> ')}:\n${c.flatMap((a) => c.filter((b) => edges.get(a)?.has(b)).map((b) => `  ${edges.get(a)!.get(b)}`)).join('\n')}`);
    expect(explain, 'folders of src/ that import each other').toEqual([]);
  });

  it('has no import cycle between its files either, inside a folder included', () => {
    expect(folderCycles(fileImports(src)), 'files of src/ that import each other').toEqual([]);
  });

  it('imports only downward, row by row, and every folder has its row', () => {
    expect(layerBreaks(edges, LAYERS)).toEqual([]);
    const folders = new Set([...src.keys()].map(folderOf));
    expect([...folders].filter((f) => !LAYERS.flat().includes(f)), 'folders on no row of LAYERS').toEqual([]);
  });

  it('reads the imports it must: src/workflows/run.ts reaches core and, as a type, activities', () => {
    expect(edges.get('workflows')?.get('core')).toMatch(/^workflows\/.+ -> core\//);
    expect(edges.get('workflows')?.has('activities')).toBe(true);
  });
});

describe('the layer checks fire', () => {
  const tree = (files: Record<string, string>): Map<string, Map<string, string>> => folderImports(new Map(Object.entries(files)));

  it('finds two folders that import each other, a type import included', () => {
    const edges = tree({ 'a/x.ts': "import type { Y } from '../b/y';\nexport const x = 1;", 'b/y.ts': "import { x } from '../a/x';\nexport type Y = typeof x;" });
    expect(folderCycles(edges)).toEqual([['a', 'b']]);
    expect(edges.get('a')?.get('b')).toBe('a/x.ts -> b/y.ts');
  });

  it('finds a cycle through three folders, by re-export, index file and import()', () => {
    const edges = tree({
      'a/index.ts': "export * from './x';",
      'a/x.ts': "export { y } from '../b/y';",
      'b/y.ts': "export const y = () => import('../c');",
      'c/index.ts': "export type A = import('../a').X;",
    });
    expect(folderCycles(edges)).toEqual([['a', 'b', 'c']]);
  });

  it('leaves files that import each other inside one folder, and packages, alone', () => {
    const edges = tree({ 'a/x.ts': "import { y } from './y';\nimport { z } from 'zod';", 'a/y.ts': "import { x } from './x';", 'b/z.ts': "import { x } from '../a/x';" });
    expect(folderCycles(edges)).toEqual([]);
    expect([...edges.keys()]).toEqual(['b']);
  });

  it('finds files of one folder that import each other, through a third and by a type import', () => {
    const files = new Map(Object.entries({ 'a/x.ts': "import { y } from './y';", 'a/y.ts': "import type { Z } from './z';", 'a/z.ts': "import { x } from './x';\nexport type Z = 1;", 'a/w.ts': "import { x } from './x';" }));
    expect(folderCycles(fileImports(files))).toEqual([['a/x.ts', 'a/y.ts', 'a/z.ts']]);
  });

  it('reports an import up the rows, between folders of one row, and a folder on no row', () => {
    const edges = tree({ 'low/x.ts': "import '../high/y';", 'high/y.ts': "import '../peer/z';", 'peer/z.ts': "import '../new/w';", 'new/w.ts': '' });
    const breaks = layerBreaks(edges, [['low'], ['high', 'peer']]);
    expect(breaks).toEqual([
      'low (row 0) imports high (row 1): low/x.ts -> high/y.ts',
      'high (row 1) imports peer (row 1): high/y.ts -> peer/z.ts',
      'new is on no row of the layers (peer/z.ts -> new/w.ts)',
    ]);
  });
});
