/**
 * The seeded kill schedule: kill i comes at about every·(i + 1) seconds after
 * the run's first step (±25 %, seeded), of one kind, either rotating over the
 * kinds (from a seeded first kind) or drawn at random (mixed). The same
 * options give the same schedule.
 */
import { splitmix32 } from '../core';
import type { FaultKind } from './faults';

export type FaultOrder = 'rotate' | 'mixed';

export interface ScheduleOptions {
  kinds: readonly FaultKind[];
  everyS: number;
  seed: number;
  order: FaultOrder;
}

export interface ScheduledKill {
  index: number;
  /** Seconds after the run's first step ended (the runner starts the clock there). */
  atS: number;
  kind: FaultKind;
  /** Which of the kind's processes (modulo how many run), for kinds with several (inference servers). */
  pick: number;
}

export function scheduledKill(o: ScheduleOptions, index: number): ScheduledKill {
  if (o.kinds.length === 0) throw new RangeError('a fault schedule needs at least one kind');
  const draw = splitmix32((Math.imul(o.seed >>> 0, 0x27d4eb2d) ^ Math.imul(index + 1, 0x165667b1)) >>> 0);
  const jitter = (draw() - 0.5) * 0.5;
  const first = Math.floor(splitmix32(o.seed >>> 0)() * o.kinds.length);
  const kind = o.order === 'rotate' ? o.kinds[(first + index) % o.kinds.length]! : o.kinds[Math.floor(draw() * o.kinds.length)]!;
  return { index, atS: o.everyS * (index + 1 + jitter), kind, pick: Math.floor(draw() * 1024) };
}
