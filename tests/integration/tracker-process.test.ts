/**
 * The worker's side of the trackers (src/trackers) with the real Python
 * tracker process, no Temporal: a record a retried activity passes again
 * is logged once; a run that stops sending records (it failed, or was
 * terminated) has its process closed when idle, and its wandb run finished;
 * a process that never answers is killed; a Python that cannot start is
 * warned about and counted, never thrown.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging';
import { registry } from '../../src/monitoring/run-metrics';
import { pythonBin, ROOT } from '../../src/paths';
import { RunTrackers, type TrackingSpec } from '../../src/trackers';
import { METRIC } from '../../src/core';
import { until } from './helpers/dev-server';

const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-trackers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A logger whose JSON lines are kept, to assert on what the worker would log. */
function recordingLogger(): { log: ReturnType<typeof createLogger>; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger('trackers', sink), lines };
}

const spec = (trackWith: TrackingSpec['trackWith']): TrackingSpec => ({ trackWith, kwargs: {}, hparams: { exp_name: 'trk' } });
const step = (runId: string, s: number) => ({ run_id: runId, step: s, version: s + 1, [METRIC.rewardMean]: s / 4 });

/** Python run from python-engines (its tests package reads tracker output back with the libraries' own readers). */
function python(code: string, ...args: string[]): unknown {
  const r = spawnSync(pythonBin(), ['-c', code, ...args], { cwd: path.join(ROOT, 'python-engines'), encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as unknown;
}

/** Runs `fn` with the trackers started by `bin` instead of the venv's Python (ROLLFLOW_PYTHON). */
async function withPython(bin: string, fn: () => Promise<void>): Promise<void> {
  const saved = process.env.ROLLFLOW_PYTHON;
  process.env.ROLLFLOW_PYTHON = bin;
  try {
    await fn();
  } finally {
    if (saved === undefined) delete process.env.ROLLFLOW_PYTHON;
    else process.env.ROLLFLOW_PYTHON = saved;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function errorCount(runId: string, tracker: string): Promise<number> {
  const metric = await registry.getSingleMetric('rollflow_tracker_errors_total')!.get();
  return metric.values.filter((v) => v.labels.run_id === runId && v.labels.tracker === tracker).reduce((n, v) => n + v.value, 0);
}

describe('the worker\'s tracker processes', () => {
  it('log a record passed again (an activity retried after its write) once', async () => {
    const runDir = path.join(dir, 'retry');
    const trackers = new RunTrackers(recordingLogger().log);
    await trackers.record('retry', runDir, spec(['tensorboard']), 'metrics.jsonl', step('retry', 0), false);
    await trackers.record('retry', runDir, spec(['tensorboard']), 'metrics.jsonl', step('retry', 0), false);
    await trackers.record('retry', runDir, spec(['tensorboard']), 'metrics.jsonl', step('retry', 1), true);
    const back = python('import json, sys; from tests.trackers.read_back import EventAccumulator as E; e = E(sys.argv[1]); e.Reload(); print(json.dumps([[s.step, s.value] for s in e.Scalars(sys.argv[2])]))', path.join(runDir, 'tensorboard'), METRIC.rewardMean);
    expect(back).toEqual([[0, 0], [1, 0.25]]);
    expect(trackers.openRuns()).toEqual([]); // the final record closed it
  });

  it('close a run\'s process once it has had no record for the idle time; wandb finishes its run', async () => {
    const runDir = path.join(dir, 'idle');
    const trackers = new RunTrackers(recordingLogger().log, 100);
    await trackers.record('idle', runDir, spec(['wandb']), 'metrics.jsonl', step('idle', 0), false); // not final: a run that then failed
    await until(async () => (trackers.openRuns().length === 0 ? true : undefined), 'the idle process closed', 120_000);
    const kinds = python('import glob, json, sys; from pathlib import Path; from tests.trackers.wandb_log import records; [p] = glob.glob(sys.argv[1] + "/wandb/offline-run-*-idle/run-idle.wandb"); print(json.dumps([r.WhichOneof("record_type") for r in records(Path(p))]))', runDir) as string[];
    expect(kinds).toContain('history');
    expect(kinds).toContain('exit'); // run.finish() was called: the offline run is complete for `wandb sync`
  });

  it('kill a process that does not answer in time; the next record starts a new one', async () => {
    // A "python" that starts, notes its pid and never answers (a deadlocked tracker library).
    const hang = path.join(dir, 'hang.sh');
    writeFileSync(hang, `#!/bin/sh\necho $$ >> ${dir}/hang.pids\nexec sleep 1000\n`);
    chmodSync(hang, 0o755);
    const { log, lines } = recordingLogger();
    const trackers = new RunTrackers(log, 60_000, 5_000); // long enough for sh to start and note its pid on a loaded machine
    await withPython(hang, async () => {
      await trackers.record('hang', path.join(dir, 'hang'), spec(['wandb']), 'metrics.jsonl', step('hang', 0), false);
      await trackers.record('hang', path.join(dir, 'hang'), spec(['wandb']), 'metrics.jsonl', step('hang', 1), false);
    });
    const pids = readFileSync(path.join(dir, 'hang.pids'), 'utf8').trim().split('\n').map(Number);
    expect(pids).toHaveLength(2); // one process per record: the hung one was not waited on again
    expect(alive(pids[0]!)).toBe(false);
    expect(String(lines.find((l) => l.tracker === 'wandb')?.error)).toMatch(/no answer within 5 s; the process was killed/);
    await trackers.closeAll();
    expect(pids.map(alive)).toEqual([false, false]);
  });

  it('warn about and count a Python that cannot start, and never throw', async () => {
    const { log, lines } = recordingLogger();
    const trackers = new RunTrackers(log);
    await withPython(path.join(dir, 'no-such-python'), async () => {
      await trackers.record('nopy', path.join(dir, 'nopy'), spec(['tensorboard', 'stdout']), 'metrics.jsonl', step('nopy', 0), false);
      await trackers.record('nopy', path.join(dir, 'nopy'), spec(['tensorboard', 'stdout']), 'metrics.jsonl', step('nopy', 1), false);
    });
    const warnings = lines.filter((l) => l.msg === 'tracker failed; the run goes on without it (counted in rollflow_tracker_errors_total)');
    expect(warnings).toHaveLength(1); // once per tracker and run
    expect(String(warnings[0]!.error)).toContain('ENOENT');
    expect(await errorCount('nopy', 'tensorboard')).toBe(4); // config and record, for each of the two records
    expect(lines.filter((l) => l.msg === 'step 0' || l.msg === 'step 1')).toHaveLength(2); // stdout went on
    await trackers.closeAll();
  });
});
