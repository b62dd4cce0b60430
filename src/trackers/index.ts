/**
 * A run's experiment trackers (track_with), fed from the worker: `stdout`
 * writes a line per record to the worker's log; `tensorboard` and `wandb` run
 * in one Python process per run (python-engines' trackers, with the real
 * libraries), started on the run's first record and closed after its last.
 *
 * A tracker never fails the run: its errors are logged (once per tracker and
 * run) and counted (rollflow_tracker_errors_total), and the record goes on to
 * the others. A process that died is started again for the next record.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Counter } from 'prom-client';
import type { Logger } from '../logging';
import { registry } from '../monitoring/run-metrics';
import { pythonBin, ROOT } from '../paths';
import { pythonEnginesEnv } from '../stack/engines';
import type { TrackingSpec } from './spec';

export type { TrackingSpec } from './spec';


/** How long a record may take in the trackers before the run goes on without waiting. */
const ANSWER_TIMEOUT_MS = 60_000;

const trackerErrors = new Counter({ name: 'rollflow_tracker_errors_total', help: 'Errors of experiment trackers (track_with); the run goes on without the failed tracker.', labelNames: ['run_id', 'tracker'] as const, registers: [registry] });

interface Answer {
  ok: boolean;
  errors: { tracker: string; error: string }[];
}

/** The Python trackers of one run: a JSON line in, an answer line out. */
class TrackerProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly answers: ((a: Answer) => void)[] = [];
  readonly exited: Promise<void>;

  constructor(runId: string, runDir: string, spec: TrackingSpec, log: Logger) {
    const python = spec.trackWith.filter((t) => t !== 'stdout');
    this.child = spawn(pythonBin(), ['-m', 'rollflow_engines', 'track', '--run-id', runId, '--run-dir', runDir, '--track-with', python.join(','), '--kwargs', JSON.stringify(spec.kwargs)], { env: pythonEnginesEnv(), cwd: ROOT });
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      let answer: Answer;
      try {
        answer = JSON.parse(line) as Answer;
      } catch {
        return; // a library printing to stdout: not an answer
      }
      this.answers.shift()?.(answer);
    });
    createInterface({ input: this.child.stderr }).on('line', (line) => log.debug({ run_id: runId, line }, 'tracker process'));
    this.exited = new Promise((resolve) => this.child.once('close', () => resolve()));
    this.child.once('close', () => this.answers.splice(0).forEach((r) => r({ ok: false, errors: [{ tracker: python.join(','), error: 'the tracker process exited' }] })));
    this.child.stdin.on('error', () => undefined); // a dead process: its answer says so
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  send(message: unknown): Promise<Answer> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ ok: false, errors: [{ tracker: 'all', error: `no answer within ${ANSWER_TIMEOUT_MS / 1000} s` }] }), ANSWER_TIMEOUT_MS);
      this.answers.push((a) => {
        clearTimeout(timer);
        resolve(a);
      });
      this.child.stdin.write(`${JSON.stringify(message)}\n`);
    });
  }

  /** EOF: each tracker closes (wandb finishes its run), then the process exits. */
  async close(): Promise<void> {
    this.child.stdin.end();
    await this.exited;
  }
}

export class RunTrackers {
  private readonly processes = new Map<string, TrackerProcess>();
  private readonly warned = new Set<string>();

  constructor(private readonly log: Logger) {}

  /** One record of a run's metrics.jsonl or validation.jsonl, to each of its trackers; `final`: the run's last record. */
  async record(runId: string, runDir: string, spec: TrackingSpec, file: string, record: { step: number } & Record<string, unknown>, final: boolean): Promise<void> {
    if (spec.trackWith.includes('stdout')) this.log.info({ run_id: runId, file, ...record }, `${file === 'validation.jsonl' ? 'validation' : 'step'} ${record.step}`);
    if (spec.trackWith.some((t) => t !== 'stdout')) {
      let proc = this.processes.get(runId);
      if (!proc?.alive) {
        proc = new TrackerProcess(runId, runDir, spec, this.log);
        this.processes.set(runId, proc);
        this.report(runId, await proc.send({ kind: 'config', config: spec.hparams }));
      }
      this.report(runId, await proc.send({ kind: 'record', file, record }));
      if (final) await this.close(runId);
    }
  }

  private report(runId: string, answer: Answer): void {
    for (const e of answer.errors) {
      trackerErrors.inc({ run_id: runId, tracker: e.tracker });
      const key = `${runId}/${e.tracker}`;
      if (this.warned.has(key)) continue;
      this.warned.add(key);
      this.log.warn({ run_id: runId, tracker: e.tracker, error: e.error }, 'tracker failed; the run goes on without it (counted in rollflow_tracker_errors_total)');
    }
  }

  async close(runId: string): Promise<void> {
    const proc = this.processes.get(runId);
    this.processes.delete(runId);
    await proc?.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.processes.keys()].map((id) => this.close(id)));
  }
}
