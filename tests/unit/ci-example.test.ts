/**
 * examples/ci/rollflow-run.yml: every rollflow command the job runs exists and accepts its options as written
 * (each asked for --help with the job's own arguments), and its validate step passes on the job's config.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = path.join(__dirname, '../..');

interface Job {
  env: Record<string, string>;
  steps: { run?: string }[];
}

const workflow = parse(readFileSync(path.join(root, 'examples/ci/rollflow-run.yml'), 'utf8')) as { on: { workflow_dispatch: { inputs: Record<string, { default: string }> } }; jobs: { train: Job } };
const job = workflow.jobs.train;
const inputs = workflow.on.workflow_dispatch.inputs;

/** The job's env with GitHub's expressions filled in as a dispatch with the default inputs would. */
function expand(text: string): string {
  return text
    .replace(/\$\{\{ inputs\.(\w+) \}\}/g, (_, k: string) => inputs[k]!.default)
    .replace(/\$\{\{ vars\.TEMPORAL_ADDRESS \}\}/g, '127.0.0.1:7999')
    .replace(/\$\{\{ github\.run_id \}\}/g, '42');
}
const env = Object.fromEntries(Object.entries(job.env).map(([k, v]) => [k, expand(String(v))]));
const rollflowSteps = job.steps.flatMap((s) => (s.run?.startsWith('bin/rollflow') ? [s.run.trim()] : []));

/** A step's command line as bash would run it (the job's env, word splitting of $SETS), minus any redirection. */
function argv(run: string): string[] {
  const r = spawnSync('bash', ['-c', `for a in ${run.replace(/>.*$/, '')}; do printf '%s\\0' "$a"; done`], { env: { ...process.env, ...env }, encoding: 'utf8' });
  return r.stdout.split('\0').filter(Boolean).slice(1);
}

describe('examples/ci/rollflow-run.yml', () => {
  it('runs validate, dev up, run, wait and dev down', () => {
    expect(rollflowSteps.map((r) => argv(r).slice(0, r.startsWith('bin/rollflow dev') ? 2 : 1).join(' '))).toEqual(['validate', 'dev up', 'run', 'wait', 'dev down']);
  });

  // Run for real against an address where no Temporal server listens: a command that took its arguments gets as far
  // as connecting (exit 1, "no Temporal server"); a wrong option would be a usage error (exit 2). `dev up` would start
  // the config's engines, so it is only parsed (commander's --help).
  it.each(rollflowSteps.filter((r) => !r.startsWith('bin/rollflow dev up')).map((r) => [r.split(' ').slice(0, 3).join(' '), r]))('%s: the command takes its arguments as written', (_, run) => {
    const state = mkdtempSync(path.join(tmpdir(), 'ci-example-'));
    const r = spawnSync(path.join(root, 'bin/rollflow'), argv(run), { encoding: 'utf8', cwd: root, env: { ...process.env, ROLLFLOW_STATE: state } });
    expect(r.stderr).not.toMatch(/unknown option|too many arguments|missing required/);
    expect([0, 1], r.stderr).toContain(r.status);
    if (r.status === 1) expect(r.stderr).toContain('no Temporal server at 127.0.0.1:7999');
  });

  it('dev up parses its arguments', () => {
    const r = spawnSync(path.join(root, 'bin/rollflow'), [...argv(rollflowSteps[1]!), '--help'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
  });

  it('its validate step passes on the job\'s config with its overrides', () => {
    const r = spawnSync(path.join(root, 'bin/rollflow'), argv(rollflowSteps[0]!), { encoding: 'utf8', cwd: root });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('temporal 127.0.0.1:7999 (external)');
  });
});
