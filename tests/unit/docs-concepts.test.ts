// docs/concepts.md points at the code with backticked `path:Symbol` and
// `path:Owner.member` references. Each must name a file that exists and a
// symbol declared in it, or the table rots silently as code moves. The
// checker is a pure function over a file reader, so the very function that
// checks the real table is shown below to reject made-up references.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(__dirname, '../..');
const CONCEPTS = 'docs/concepts.md';

/** One reference as written in the document. */
interface CodeRef {
  text: string;
  line: number;
  file: string;
  symbol: string;
  member?: string;
}

/** A file's text, or undefined when there is no such file. */
type Reader = (file: string) => string | undefined;

// A backticked span that starts with a .ts or .py path and a colon is a reference, and must parse as one.
const LOOKS_LIKE_REF = /^[\w./-]+\.(?:ts|py):/;
const REF = /^((?:[\w.-]+\/)*[\w.-]+\.(?:ts|py)):([A-Za-z_$][\w$]*)(?:\.([A-Za-z_$][\w$]*))?$/;

function parseRefs(markdown: string): { refs: CodeRef[]; malformed: string[] } {
  const refs: CodeRef[] = [];
  const malformed: string[] = [];
  markdown.split('\n').forEach((lineText, i) => {
    for (const m of lineText.matchAll(/`([^`\n]+)`/g)) {
      const text = m[1]!;
      if (!LOOKS_LIKE_REF.test(text)) continue;
      const r = REF.exec(text);
      if (r) refs.push({ text, line: i + 1, file: r[1]!, symbol: r[2]!, ...(r[3] ? { member: r[3] } : {}) });
      else malformed.push(`line ${i + 1}: \`${text}\` is neither path:Symbol nor path:Owner.member`);
    }
  });
  return { refs, malformed };
}

const esc = (name: string) => name.replace(/\$/g, '\\$');

// Top level only: a declaration at column 0, so a local variable inside a function does not count.
const tsDeclaration = (name: string) =>
  new RegExp(`^(?:export\\s+)?(?:default\\s+)?(?:declare\\s+)?(?:abstract\\s+)?(?:async\\s+)?(?:function\\*?|class|const|let|var|interface|type|enum)\\s+${esc(name)}(?![\\w$])`);
const pyDeclaration = (name: string) => new RegExp(`^(?:(?:async\\s+)?def|class)\\s+${name}(?!\\w)|^${name}\\s*(?::[^=]*)?=(?!=)`);

// A member: a method `name(`, a getter `get name(`, a field `name =` or `name:` (optionally `name?:`), with modifiers.
const tsMember = (name: string) =>
  new RegExp(`^[ \\t]+(?:(?:public|private|protected|static|readonly|override|abstract|declare|async|get|set)\\s+)*${esc(name)}\\s*[?!]?\\s*(?:<[^>]*>\\s*)?[(:=]`);
const pyMember = (name: string) => new RegExp(`^(?:(?:async\\s+)?def\\s+${name}(?!\\w)|${name}\\s*(?::[^=]*)?(?:=(?!=)|$))`);

/** The lines after a top-level declaration up to the next top-level line (closing brackets and Python comments stay inside). */
function bodyOf(lines: readonly string[], at: number, python: boolean): string[] {
  const body: string[] = [];
  for (const line of lines.slice(at + 1)) {
    if (/^\S/.test(line) && !/^[}\])]/.test(line) && !(python && line.startsWith('#'))) break;
    body.push(line);
  }
  return body;
}

/** Whether `member` is declared directly in a Python class body (at the body's own indentation, not inside a method). */
function pyHasMember(body: readonly string[], member: string): boolean {
  const indent = /^[ \t]*/.exec(body.find((l) => l.trim() !== '') ?? '')![0];
  return indent !== '' && body.some((l) => l.startsWith(indent) && !/^[ \t]/.test(l.slice(indent.length)) && pyMember(member).test(l.slice(indent.length)));
}

/** Undefined when the reference holds; otherwise what is wrong, naming the reference. */
function checkRef(ref: CodeRef, read: Reader): string | undefined {
  const where = `line ${ref.line}: \`${ref.text}\``;
  if (path.isAbsolute(ref.file) || ref.file.split('/').includes('..')) return `${where}: the path must be relative to the repository root`;
  const text = read(ref.file);
  if (text === undefined) return `${where}: no file ${ref.file}`;
  const python = ref.file.endsWith('.py');
  const lines = text.split('\n');
  const declaration = (python ? pyDeclaration : tsDeclaration)(ref.symbol);
  const at = lines.findIndex((l) => declaration.test(l));
  if (at < 0) return `${where}: ${ref.file} declares no top-level ${ref.symbol}`;
  if (ref.member === undefined) return undefined;
  const body = bodyOf(lines, at, python);
  const member = ref.member;
  const found = python ? pyHasMember(body, member) : body.some((l) => tsMember(member).test(l));
  return found ? undefined : `${where}: ${ref.symbol} in ${ref.file} declares no member ${member}`;
}

const readRepoFile: Reader = (file) => {
  const full = path.join(ROOT, file);
  return existsSync(full) && statSync(full).isFile() ? readFileSync(full, 'utf8') : undefined;
};

describe(`${CONCEPTS} references`, () => {
  const { refs, malformed } = parseRefs(readFileSync(path.join(ROOT, CONCEPTS), 'utf8'));

  it('has a concept table of at least 15 references, every one well formed', () => {
    expect(malformed, malformed.join('\n')).toEqual([]);
    expect(refs.length).toBeGreaterThanOrEqual(15);
  });

  it('names, in every reference, a file that exists and a symbol declared in it', () => {
    const problems = refs.map((r) => checkRef(r, readRepoFile)).filter((p): p is string => p !== undefined);
    expect(problems, `${CONCEPTS}:\n${problems.join('\n')}`).toEqual([]);
  });
});

describe('the reference checker', () => {
  const files: Record<string, string> = {
    'src/fake.ts': [
      'export class Store {',
      '  private items = new Map<string, number>();',
      '  get size(): number {',
      '    return 0;',
      '  }',
      '  async put<T>(key: string, value: T): Promise<void> {}',
      '}',
      'export interface Limits {',
      '  maxStaleness: number;',
      '  waves?: boolean;',
      '}',
      'export function factory() {',
      '  return {',
      '    async sync(input: string) {',
      '      return input;',
      '    },',
      '  };',
      '}',
      'const local = 1;',
      'export const Schema = z.strictObject({',
      '  generate_opt_level: z.number(),',
      '});',
    ].join('\n'),
    'py/fake.py': [
      'REGISTRY: dict[str, int] = {}',
      'PLAIN = 3',
      '',
      '',
      'def helper(x):',
      '    inner = 1',
      '    return x + inner',
      '',
      '',
      'class Engine:',
      '    """An engine."""',
      '',
      '    version: int = 0',
      '',
      '    async def pause(self, mode):',
      '        frozen = 2',
      '        return mode, frozen',
    ].join('\n'),
  };
  const read: Reader = (file) => files[file];
  /** The problem with one reference written alone in a document, or undefined. */
  const check = (text: string) => {
    const { refs, malformed } = parseRefs(`| x | \`${text}\` | y |`);
    return malformed[0] ?? checkRef(refs[0]!, read);
  };

  it.each([
    'src/fake.ts:Store',
    'src/fake.ts:Store.items',
    'src/fake.ts:Store.size',
    'src/fake.ts:Store.put',
    'src/fake.ts:Limits.maxStaleness',
    'src/fake.ts:Limits.waves',
    'src/fake.ts:factory.sync',
    'src/fake.ts:local',
    'src/fake.ts:Schema.generate_opt_level',
    'py/fake.py:REGISTRY',
    'py/fake.py:PLAIN',
    'py/fake.py:helper',
    'py/fake.py:Engine',
    'py/fake.py:Engine.version',
    'py/fake.py:Engine.pause',
  ])('accepts %s', (text) => {
    expect(check(text)).toBeUndefined();
  });

  it.each([
    ['src/missing.ts:Store', 'no file'],
    ['src/fake.ts:Missing', 'declares no top-level Missing'],
    ['src/fake.ts:Store.missing', 'declares no member missing'],
    ['src/fake.ts:Limits.put', 'declares no member put'], // put is Store's, not Limits'
    ['src/fake.ts:Store.local', 'declares no member local'], // a top-level const, not a member
    ['py/fake.py:inner', 'declares no top-level inner'], // a local of helper
    ['py/fake.py:Engine.frozen', 'declares no member frozen'], // a local of a method
    ['src/fake.ts:Store.put.deep', 'neither path:Symbol nor path:Owner.member'],
    ['src/fake.ts:', 'neither path:Symbol nor path:Owner.member'],
  ])('rejects %s, naming it', (text, why) => {
    const problem = check(text);
    expect(problem).toContain(`\`${text}\``);
    expect(problem).toContain(why);
  });

  it('reports made-up references against the real repository, each by name', () => {
    const doc = ['| a | `src/no-such-dir/missing.ts:Thing` | x |', '| b | `tests/unit/docs-concepts.test.ts:notDeclaredAnywhere` | y |'].join('\n');
    const { refs } = parseRefs(doc);
    const problems = refs.map((r) => checkRef(r, readRepoFile));
    expect(problems).toEqual([
      'line 1: `src/no-such-dir/missing.ts:Thing`: no file src/no-such-dir/missing.ts',
      'line 2: `tests/unit/docs-concepts.test.ts:notDeclaredAnywhere`: tests/unit/docs-concepts.test.ts declares no top-level notDeclaredAnywhere',
    ]);
  });
});
