/**
 * The seeded fault schedule: fault i comes at about every·(i + 1) seconds
 * after the run's first step (±25 %, seeded), of one kind, either rotating
 * over the kinds (from a seeded first kind) or drawn at random (mixed), with
 * a signal drawn from the given ones; a stop lasts 30–120 s (seeded), and so
 * do a full disk and a partition. A `corrupt` fault always ends in a kill;
 * `disk` and `partition` faults send no signal. The same options give the
 * same schedule, and adding kinds or signals to a list never changes the
 * draws of the others.
 */
import { splitmix32 } from '../core';
import type { FaultKind, FaultSignal } from './faults';

export type FaultOrder = 'rotate' | 'mixed';

export interface ScheduleOptions {
  kinds: readonly FaultKind[];
  /** Absent: kill only (the schedules recorded before stops existed). */
  signals?: readonly FaultSignal[];
  everyS: number;
  seed: number;
  order: FaultOrder;
}

export interface ScheduledFault {
  index: number;
  /** Seconds after the run's first step ended (the runner starts the clock there). */
  atS: number;
  kind: FaultKind;
  /** What the process of the kind gets: drawn for a process kind, kill for `corrupt`, none for `disk`. */
  signal?: FaultSignal;
  /** For a stop: seconds until SIGCONT; for a disk fault: seconds the disk stays full; for a partition: seconds until it heals. */
  stopS: number;
  /** Which of the kind's processes (modulo how many run), for kinds with several (inference servers); for a partition, which proxied engine. */
  pick: number;
}

export const STOP_MIN_S = 30;
export const STOP_MAX_S = 120;

export function scheduledFault(o: ScheduleOptions, index: number): ScheduledFault {
  if (o.kinds.length === 0) throw new RangeError('a fault schedule needs at least one kind');
  const signals = o.signals ?? ['kill'];
  if (signals.length === 0) throw new RangeError('a fault schedule needs at least one signal');
  const draw = splitmix32((Math.imul(o.seed >>> 0, 0x27d4eb2d) ^ Math.imul(index + 1, 0x165667b1)) >>> 0);
  const jitter = (draw() - 0.5) * 0.5;
  const first = Math.floor(splitmix32(o.seed >>> 0)() * o.kinds.length);
  const kind = o.order === 'rotate' ? o.kinds[(first + index) % o.kinds.length]! : o.kinds[Math.floor(draw() * o.kinds.length)]!;
  const pick = Math.floor(draw() * 1024);
  // Drawn after the draws the kill-only schedule made, so its times, kinds and picks are unchanged.
  const signal = signals[Math.floor(draw() * signals.length)]!;
  const stopS = STOP_MIN_S + draw() * (STOP_MAX_S - STOP_MIN_S);
  const sent = kind === 'corrupt' ? 'kill' : kind === 'disk' || kind === 'partition' ? undefined : signal;
  return { index, atS: o.everyS * (index + 1 + jitter), kind, ...(sent ? { signal: sent } : {}), stopS, pick };
}
