/**
 * Where a rollout's time beyond its DES goes, read from the run's Temporal
 * histories after it ended. The DES starts every trajectory when the step is
 * dispatched and lets each spend only its generations and env steps; the real
 * system also starts workflows, queues workflow tasks and runs local
 * activities inside them. For each trajectory this splits its end (measured
 * from the run's first child dispatch) into the time its activities executed
 * and the rest, the orchestration delay, and names two parts of that rest: how
 * late the trajectory workflow started, and how long its workflow tasks waited
 * in the queue for a worker. The trajectory that ended last sets the makespan,
 * so its own split is reported beside the spreads. A trajectory that continued as
 * new would count from its last execution's start; W7's never do.
 */
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

export interface Spread {
  mean_s: number;
  p50_s: number;
  p90_s: number;
  max_s: number;
}

export interface TrajectoryDelay {
  /** Its workflow's start, after the run dispatched the step's first group. */
  start_offset_s: number;
  /** Its workflow tasks, scheduled → started, summed: time waiting for a worker to take them. */
  task_wait_s: number;
  /** Its activities, started → completed, summed: what the DES models. */
  activity_s: number;
  /** Its end after the dispatch, less its activity time: all that the DES does not have. */
  delay_s: number;
  end_s: number;
}

export interface OrchestrationDelay {
  trajectories: number;
  start_offset: Spread;
  task_wait: Spread;
  delay: Spread;
  /** The trajectory that ended last. */
  last: TrajectoryDelay;
}

const timeOf = (e: HistoryEvent): number => (e.eventTime ? tsToMs(e.eventTime) : NaN);

/** When the run dispatched its first child (ms since the epoch), from its executions' histories; undefined if it started none. */
export function dispatchedAt(runHistories: readonly (readonly HistoryEvent[])[]): number | undefined {
  const starts = runHistories.flat().filter((e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED).map(timeOf);
  return starts.length > 0 ? Math.min(...starts) : undefined;
}

/** One trajectory workflow's split, its times relative to `dispatchMs`. */
export function trajectoryDelay(events: readonly HistoryEvent[], dispatchMs: number): TrajectoryDelay {
  const at = new Map<number, number>(); // event id → time, for the events a later one names as its scheduling event
  let taskWait = 0;
  let activity = 0;
  for (const e of events) {
    const t = timeOf(e);
    at.set(Number(e.eventId), t);
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) taskWait += t - at.get(Number(e.workflowTaskStartedEventAttributes?.scheduledEventId))!;
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) activity += t - at.get(Number(e.activityTaskCompletedEventAttributes?.startedEventId))!;
  }
  const start = timeOf(events[0]!) - dispatchMs;
  const end = timeOf(events[events.length - 1]!) - dispatchMs;
  return { start_offset_s: s(start), task_wait_s: s(taskWait), activity_s: s(activity), delay_s: s(end - activity), end_s: s(end) };
}

export function orchestrationDelay(runHistories: readonly (readonly HistoryEvent[])[], trajectoryHistories: readonly (readonly HistoryEvent[])[]): OrchestrationDelay | null {
  const dispatch = dispatchedAt(runHistories);
  const done = trajectoryHistories.filter((h) => h.length > 0 && h[h.length - 1]!.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  if (dispatch === undefined || done.length === 0) return null;
  const all = done.map((h) => trajectoryDelay(h, dispatch));
  return {
    trajectories: all.length,
    start_offset: spread(all.map((d) => d.start_offset_s)),
    task_wait: spread(all.map((d) => d.task_wait_s)),
    delay: spread(all.map((d) => d.delay_s)),
    last: all.reduce((a, b) => (b.end_s > a.end_s ? b : a)),
  };
}

export function spread(values: readonly number[]): Spread {
  const v = [...values].sort((a, b) => a - b);
  const at = (q: number) => v[Math.min(v.length - 1, Math.floor(q * v.length))]!;
  return { mean_s: r(v.reduce((a, b) => a + b, 0) / v.length), p50_s: at(0.5), p90_s: at(0.9), max_s: v[v.length - 1]! };
}

const r = (x: number) => Math.round(x * 1000) / 1000;
const s = (ms: number) => r(ms / 1000);
