/**
 * A second build of this checkout for the upgrade test: src/ copied, one
 * workflow-logic change spliced into it, compiled by tsc into a tree of its
 * own whose dist/cli/index.js is a complete worker. The tree links this
 * checkout's node_modules, .venv and python-engines, so the compiled code
 * resolves its packages and finds Python where build A does (paths.ts
 * takes the project root from dist/'s parent).
 *
 * Beside it, the same change without its `patched()` guard, for the replay
 * that shows why the guard is needed: a copy of the compiled tree with only
 * the changed file compiled again (TypeScript's transpileModule, the same
 * compiler options; a full second tsc would double the build's ~15 s).
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { ROOT } from './dev-server';

/** `insert` goes before the one line of src/`file` that starts (after indentation) with `beforeLine`. */
export interface SourceChange {
  file: string;
  beforeLine: string;
  insert: string;
  /** The `patched('<id>')` call in `insert`: the unguarded variant has `true` in its place. */
  patchCall: string;
}

export interface ChangedBuild {
  root: string;
  /** dist/cli/index.js of the build: `node <cliEntry> worker <config>` runs its worker. */
  cliEntry: string;
  /** The build's compiled workflows, as a worker bundles them. */
  workflowsPath: string;
  /** The same workflows with the change unguarded (patchCall replaced by `true`). */
  unguardedWorkflowsPath: string;
}

/** The source of src/`change.file` with `insert` spliced in; a clear error when the anchor line is not there exactly once. */
export function changedSource(change: SourceChange, source = readFileSync(path.join(ROOT, 'src', change.file), 'utf8')): string {
  if (!change.insert.includes(change.patchCall)) throw new Error(`the change's insert does not contain its patch call ${change.patchCall}`);
  const lines = source.split('\n');
  const at = lines.flatMap((l, i) => (l.trimStart().startsWith(change.beforeLine) ? [i] : []));
  if (at.length !== 1) throw new Error(`src/${change.file}: expected one line starting with ${JSON.stringify(change.beforeLine)} to insert the test's change before, found ${at.length}`);
  lines.splice(at[0]!, 0, change.insert);
  return lines.join('\n');
}

/** Builds the changed tree in `dir` (created; it should be empty or absent). */
export async function buildChanged(dir: string, change: SourceChange): Promise<ChangedBuild> {
  // A worker bundles dist/workflows; a change elsewhere would not be workflow logic.
  if (!change.file.startsWith('workflows/')) throw new Error(`${change.file}: the change must be in src/workflows`);
  mkdirSync(dir, { recursive: true });
  for (const linked of ['node_modules', '.venv', 'python-engines']) symlinkSync(path.join(ROOT, linked), path.join(dir, linked));
  cpSync(path.join(ROOT, 'src'), path.join(dir, 'src'), { recursive: true });
  const guarded = changedSource(change);
  writeFileSync(path.join(dir, 'src', change.file), guarded);
  // The checkout's build settings, without the declarations and source maps a worker does not read.
  const tsconfig = { extends: path.join(ROOT, 'tsconfig.build.json'), compilerOptions: { rootDir: 'src', outDir: 'dist', declaration: false, sourceMap: false }, include: ['src'] };
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  await promisify(execFile)(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], { cwd: dir }).catch((e: { stdout?: string; message: string }) => {
    throw new Error(`tsc failed on the changed copy of src/ in ${dir}: ${e.stdout || e.message}`);
  });

  const unguarded = path.join(dir, 'dist-unguarded');
  cpSync(path.join(dir, 'dist'), unguarded, { recursive: true });
  const options = ts.parseJsonConfigFileContent(tsconfig, ts.sys, dir).options;
  const js = ts.transpileModule(guarded.replace(change.patchCall, 'true'), { compilerOptions: options, fileName: change.file }).outputText;
  writeFileSync(path.join(unguarded, change.file.replace(/\.ts$/, '.js')), js);

  return { root: dir, cliEntry: path.join(dir, 'dist/cli/index.js'), workflowsPath: path.join(dir, 'dist/workflows'), unguardedWorkflowsPath: path.join(unguarded, 'workflows') };
}
