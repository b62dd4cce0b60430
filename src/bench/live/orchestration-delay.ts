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
import { trajectoryOfSummary } from '../../workflows/metadata';
import { distribution, executions } from './history-times';

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
  /** Workflows measured: trajectory workflows, or groups that ran their trajectories themselves (byWorkflowType). */
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
  const scheduled = new Map<number, number>(); // workflow task scheduled event id → its time
  let taskWait = 0;
  for (const e of events) {
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) scheduled.set(Number(e.eventId), timeOf(e));
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) taskWait += timeOf(e) - scheduled.get(Number(e.workflowTaskStartedEventAttributes?.scheduledEventId))!;
  }
  const activity = criticalActivityMs(events);
  const start = timeOf(events[0]!) - dispatchMs;
  const end = timeOf(events[events.length - 1]!) - dispatchMs;
  return { start_offset_s: s(start), task_wait_s: s(taskWait), activity_s: s(activity), delay_s: s(end - activity), end_s: s(end) };
}

const typeOf = (h: readonly HistoryEvent[]) => h[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;

/**
 * The time a workflow's activities executed (started → completed, as W8 times them) on its longest path: a trajectory
 * workflow's, summed; a group that ran its trajectories itself (trajectory_workflows false), the longest of its
 * trajectories' sums, each activity's trajectory read from its summary (`<uid> · …`), since they ran side by side.
 */
function criticalActivityMs(events: readonly HistoryEvent[]): number {
  const byUid = typeOf(events) === 'group';
  const perTrajectory = new Map<string, number>();
  for (const x of executions(events)) {
    const uid = byUid && x.summary ? trajectoryOfSummary(x.summary) : '';
    perTrajectory.set(uid, (perTrajectory.get(uid) ?? 0) + x.seconds * 1000);
  }
  return Math.max(0, ...perTrajectory.values());
}

/**
 * A run's histories (its executions and its trajectories', in any order) split by workflow type, as orchestrationDelay
 * takes them. A group that started no child workflow ran its trajectories itself (trajectory_workflows false): it is
 * the unit that starts, queues its tasks and ends, so it stands where its trajectories' workflows would.
 */
export function byWorkflowType(histories: readonly (readonly HistoryEvent[])[]): { run: HistoryEvent[][]; trajectory: HistoryEvent[][] } {
  const startsChildren = (h: readonly HistoryEvent[]) => h.some((e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED);
  const ranTrajectories = (h: readonly HistoryEvent[]) => typeOf(h) === 'trajectory' || (typeOf(h) === 'group' && !startsChildren(h));
  return { run: histories.filter((h) => typeOf(h) === 'run').map((h) => [...h]), trajectory: histories.filter(ranTrajectories).map((h) => [...h]) };
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

/** The mean, and W8's nearest-rank median, p90 and max (distribution), under this report's names. */
export function spread(values: readonly number[]): Spread {
  const d = distribution(values);
  return { mean_s: r(values.reduce((a, b) => a + b, 0) / values.length), p50_s: d.median_s!, p90_s: d.p90_s!, max_s: d.max_s! };
}

const r = (x: number) => Math.round(x * 1000) / 1000;
const s = (ms: number) => r(ms / 1000);
