// Every relative link in README.md and docs/*.md must point at a file that
// exists (a directory counts: GitHub lists it), and a `#fragment` into a
// markdown file at one of its headings, or pages rot silently as files move.
// The checker is a pure function over a reader, so the very function that
// checks the real pages is shown below to reject made-up links.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(__dirname, '../..');

/** What is at a repository path: a file's text, 'dir', or undefined when nothing is. */
type Reader = (file: string) => string | 'dir' | undefined;

interface Link {
  target: string;
  line: number;
}

/** The lines of a markdown text outside fenced code blocks, with inline code spans blanked. */
function proseLines(markdown: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((text, i) => {
    const f = /^\s*(`{3,}|~{3,})/.exec(text)?.[1];
    if (f && (fence === undefined || f.startsWith(fence))) {
      fence = fence === undefined ? f : undefined;
      return;
    }
    if (fence === undefined) out.push({ text: text.replace(/(`+)[^`]*?\1/g, ''), line: i + 1 });
  });
  return out;
}

/** Inline links and images `[text](target)`, and reference definitions `[id]: target`. */
function parseLinks(markdown: string): Link[] {
  const links: Link[] = [];
  for (const { text, line } of proseLines(markdown)) {
    for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: m[1]!, line });
    const ref = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(text);
    if (ref) links.push({ target: ref[1]!, line });
  }
  return links;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text } of proseLines(markdown)) {
    const h = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (!h) continue;
    const base = slug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);

/** Undefined when the link resolves; otherwise what is wrong, naming the page, line and link. */
function checkLink(page: string, link: Link, read: Reader): string | undefined {
  const { target, line } = link;
  if (isExternal(target)) return undefined;
  const where = `${page}:${line}: (${target})`;
  const [rawPath, fragment] = target.split('#', 2) as [string, string | undefined];
  const filePart = decodeURIComponent(rawPath);
  if (filePart.startsWith('/')) return `${where}: an absolute path; write it relative to ${page}`;
  const file = filePart === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), filePart));
  if (file.startsWith('../')) return `${where}: points outside the repository`;
  const found = read(file.replace(/\/$/, ''));
  if (found === undefined) return `${where}: no file ${file}`;
  if (fragment === undefined || fragment === '' || found === 'dir' || !file.endsWith('.md')) return undefined;
  // A heading's code spans are part of its anchor, and proseLines blanks spans: unwrap them first.
  const withCode = found.replace(/`([^`]*)`/g, '$1');
  return anchors(withCode).has(fragment.toLowerCase()) ? undefined : `${where}: ${file} has no heading #${fragment}`;
}

const readRepo: Reader = (file) => {
  const full = path.join(ROOT, file);
  if (!existsSync(full)) return undefined;
  return statSync(full).isDirectory() ? 'dir' : readFileSync(full, 'utf8');
};

const PAGES = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

describe('relative links in README.md and docs/*.md', () => {
  it.each(PAGES)('%s: every relative link resolves', (page) => {
    const text = readRepo(page) as string;
    const problems = parseLinks(text)
      .map((l) => checkLink(page, l, readRepo))
      .filter((p): p is string => p !== undefined);
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('docs/README.md links every page in docs/', () => {
    const index = readRepo('docs/README.md') as string;
    const linked = new Set(parseLinks(index).map((l) => l.target.split('#')[0]));
    const missing = PAGES.filter((p) => p.startsWith('docs/') && p !== 'docs/README.md' && !linked.has(p.slice('docs/'.length)));
    expect(missing).toEqual([]);
  });

  it('README.md stays a short first page (at most 220 lines)', () => {
    expect((readRepo('README.md') as string).trimEnd().split('\n').length).toBeLessThanOrEqual(220);
  });
});

describe('the link checker', () => {
  const files: Record<string, string | 'dir'> = {
    'README.md': '# Top\n',
    docs: 'dir',
    'docs/a.md': '# Page A\n\n## Two `make` commands\n\n## Repeat\n\n## Repeat\n',
    'bench/results': 'dir',
    'bench/results/w1.md': 'w1',
  };
  const read: Reader = (file) => files[file];
  const check = (markdown: string, page = 'docs/b.md') => parseLinks(markdown).map((l) => checkLink(page, l, read));

  it.each([
    '[a](a.md)',
    '[a](./a.md)',
    '[top](../README.md)',
    '[w1](../bench/results/w1.md)',
    '[results](../bench/results/)',
    '![plot](../bench/results/w1.md)',
    '[anchor](a.md#two-make-commands)',
    '[second](a.md#repeat-1)',
    '[web](https://temporal.io) <http://127.0.0.1:8233>',
    '[ref]: a.md',
    '`[not a link](missing.md)`',
    '```\n[in a fence](missing.md)\n```',
  ])('accepts %s', (markdown) => {
    expect(check(markdown).filter(Boolean)).toEqual([]);
  });

  it.each([
    ['[x](missing.md)', 'docs/b.md:1: (missing.md): no file docs/missing.md'],
    ['[x](docs/a.md)', 'no file docs/docs/a.md'], // a README-relative path written in docs/
    ['[x](a.md#nowhere)', 'docs/a.md has no heading #nowhere'],
    ['[x](a.md#repeat-2)', 'has no heading #repeat-2'],
    ['[x](/docs/a.md)', 'an absolute path'],
    ['[x](../../outside.md)', 'points outside the repository'],
    ['text\n\n[ref]: nothing.md', 'docs/b.md:3: (nothing.md): no file docs/nothing.md'],
  ])('rejects %s, naming it', (markdown, why) => {
    const problems = check(markdown).filter(Boolean);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(why);
  });

  it('reports a made-up link against the real repository', () => {
    const links = parseLinks('[gone](bench/results/no-such-result.md) [kept](bench/results/w1.md)');
    expect(links.map((l) => checkLink('README.md', l, readRepo))).toEqual([
      'README.md:1: (bench/results/no-such-result.md): no file bench/results/no-such-result.md',
      undefined,
    ]);
  });
});
