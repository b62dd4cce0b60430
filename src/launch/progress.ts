/**
 * Progress of a run for a person: on a terminal one line redrawn in place (a
 * bar, step/max, ETA, reward, validation reward, staleness, in flight); to a
 * pipe or file a plain line per step, which is what scripts and tests read.
 */
import type { RunStatus } from '../workflows/run';

const BAR = 24;

function eta(s: RunStatus, startStep: number, startedMs: number, nowMs: number): string {
  const done = s.step - startStep;
  if (done <= 0 || s.step >= s.maxSteps) return '–';
  const secs = Math.round(((nowMs - startedMs) / 1000 / done) * (s.maxSteps - s.step));
  return secs >= 3600 ? `${Math.floor(secs / 3600)}h${String(Math.floor((secs % 3600) / 60)).padStart(2, '0')}m` : `${Math.floor(secs / 60)}m${String(secs % 60).padStart(2, '0')}s`;
}

const reward = (s: RunStatus) => (s.step > 0 ? s.totals.lastRewardMean.toFixed(3) : '  -  '); // no batch trained yet
const validation = (s: RunStatus) => (s.lastValidation ? `val reward ${s.lastValidation.rewardMean.toFixed(3)} (after ${s.lastValidation.steps} steps)` : '');

/** The plain line of a step, for a pipe or a log: the bar's numbers but the ETA. */
export function stepLine(s: RunStatus): string {
  const val = s.lastValidation ? `  ${validation(s)}` : '';
  return `step ${s.step}/${s.maxSteps}  version ${s.version}  reward ${reward(s)}${val}  staleness max ${s.staleness.max}  in flight ${s.running}  in system ${s.samplesInSystem}/${s.maxSamplesInSystem}`;
}

/** The terminal's line: a bar and the same numbers, with an ETA and what runs now. */
export function barLine(s: RunStatus, startStep: number, startedMs: number, nowMs: number): string {
  const filled = s.maxSteps > 0 ? Math.round((BAR * Math.min(s.step, s.maxSteps)) / s.maxSteps) : BAR;
  const val = s.lastValidation ? `  val ${s.lastValidation.rewardMean.toFixed(3)}` : '';
  return `[${'#'.repeat(filled)}${'-'.repeat(BAR - filled)}] ${s.step}/${s.maxSteps}  ETA ${eta(s, startStep, startedMs, nowMs)}  reward ${reward(s)}${val}  staleness ${s.staleness.max}  in flight ${s.running}${s.suspended ? '  SUSPENDED' : ''}`;
}

/** How a cancelled run ended: before its first step it had nothing to checkpoint. */
export function cancelledNote({ atStep, groupsInFlight }: NonNullable<RunStatus['cancelled']>): string {
  const saved = atStep > 0 ? 'a checkpoint was saved' : 'nothing was trained, so no checkpoint';
  return `cancelled after step ${atStep}: ${saved}, ${groupsInFlight} workflows still generating were cancelled`;
}

export interface ProgressSink {
  /** A status seen while following; prints what changed. */
  update(s: RunStatus): void;
  /** A line of its own (dataset notes, the end). */
  note(line: string): void;
  end(): void;
}

export function progressSink(out: (line: string) => void, tty: boolean, now: () => number = Date.now): ProgressSink {
  let lastStep = -1;
  let start: { step: number; ms: number } | undefined;
  let drawn = false;
  if (!tty) {
    return {
      update: (s) => {
        if (s.step === lastStep) return;
        lastStep = s.step;
        out(stepLine(s));
      },
      note: out,
      end: () => undefined,
    };
  }
  const write = (text: string) => process.stdout.write(text);
  return {
    update: (s) => {
      start ??= { step: s.step, ms: now() };
      write(`\r\x1b[2K${barLine(s, start.step, start.ms, now())}`);
      drawn = true;
    },
    note: (line) => {
      if (drawn) write('\r\x1b[2K');
      out(line);
      drawn = false;
    },
    end: () => {
      if (drawn) write('\n');
      drawn = false;
    },
  };
}
