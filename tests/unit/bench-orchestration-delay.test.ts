// W7's orchestration delay on hand-made histories: which intervals count as the DES's (activities executing)
// and which as orchestration (a late start, queued workflow tasks, local activities inside a task).
import { describe, expect, it } from 'vitest';
import Long from 'long';
import { temporal } from '@temporalio/proto';
import { byWorkflowType, dispatchedAt, orchestrationDelay, spread, trajectoryDelay } from '../../src/bench/live/orchestration-delay';

const T = temporal.api.enums.v1.EventType;
const at = (ms: number) => ({ seconds: Long.fromNumber(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 });
type E = temporal.api.history.v1.IHistoryEvent;

/** A trajectory of one turn: started at `start`, its first task queued `queued` ms, a 10 ms local activity in it, the turn's activity `ran` ms, then a last task. */
function trajectory(start: number, queued: number, ran: number, complete = true): E[] {
  const ev: E[] = [];
  const add = (t: number, eventType: temporal.api.enums.v1.EventType, attrs: Partial<E> = {}) => ev.push({ eventId: Long.fromNumber(ev.length + 1), eventTime: at(t), eventType, ...attrs });
  add(start, T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
  add(start, T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
  add(start + queued, T.EVENT_TYPE_WORKFLOW_TASK_STARTED, { workflowTaskStartedEventAttributes: { scheduledEventId: Long.fromNumber(2) } });
  const done = start + queued + 10; // the reset, a local activity, runs inside the task
  add(done, T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  add(done, T.EVENT_TYPE_MARKER_RECORDED);
  add(done, T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, { activityTaskScheduledEventAttributes: { activityType: { name: 'playTurn' } } });
  add(done + 5, T.EVENT_TYPE_ACTIVITY_TASK_STARTED, { activityTaskStartedEventAttributes: { scheduledEventId: Long.fromNumber(6) } });
  add(done + 5 + ran, T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, { activityTaskCompletedEventAttributes: { scheduledEventId: Long.fromNumber(6), startedEventId: Long.fromNumber(7) } });
  add(done + 5 + ran, T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
  add(done + 5 + ran + 20, T.EVENT_TYPE_WORKFLOW_TASK_STARTED, { workflowTaskStartedEventAttributes: { scheduledEventId: Long.fromNumber(9) } });
  add(done + 5 + ran + 25, T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  if (complete) add(done + 5 + ran + 25, T.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  return ev;
}

const run = (dispatches: number[]): E[] => dispatches.map((t, i) => ({ eventId: Long.fromNumber(i + 1), eventTime: at(t), eventType: T.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED }));

describe('orchestration delay', () => {
  it('counts activity execution as the DES does and everything else as delay', () => {
    const d = trajectoryDelay(trajectory(2_000, 300, 5_000), 1_000);
    expect(d.start_offset_s).toBe(1);
    expect(d.task_wait_s).toBe(0.32); // 300 + 20 ms queued
    expect(d.activity_s).toBe(5); // started → completed; the 5 ms before it started is delay
    // end at 2000 + 300 + 10 + 5 + 5000 + 25 = 7340 ms, 6.34 s after the dispatch, of which 5 s ran
    expect(d.end_s).toBe(6.34);
    expect(d.delay_s).toBe(1.34);
  });

  it('measures from the run\'s first child dispatch, across continued-as-new executions', () => {
    expect(dispatchedAt([run([5_000, 6_000]), run([4_000])])).toBe(4_000);
    expect(dispatchedAt([[]])).toBeUndefined();
  });

  it('reports the trajectory that ended last, and skips those that never completed', () => {
    const o = orchestrationDelay([run([0])], [trajectory(100, 0, 1_000), trajectory(3_000, 900, 1_000), trajectory(0, 0, 50_000, false)])!;
    expect(o.trajectories).toBe(2);
    expect(o.last.start_offset_s).toBe(3);
    expect(o.start_offset.max_s).toBe(3);
    expect(o.task_wait.max_s).toBe(0.92);
  });

  it('has nothing to say about a run that dispatched nothing or finished no trajectory', () => {
    expect(orchestrationDelay([[]], [trajectory(0, 0, 1)])).toBeNull();
    expect(orchestrationDelay([run([0])], [trajectory(0, 0, 1, false)])).toBeNull();
  });

  it('spreads: mean and upper percentiles', () => {
    expect(spread([4, 1, 3, 2])).toEqual({ mean_s: 2.5, p50_s: 3, p90_s: 4, max_s: 4 });
  });

  it('splits a run\'s histories by workflow type, as one listing returns them; a group that started no child ran its trajectories itself', () => {
    const started = (name: string): E[] => [{ eventId: Long.fromNumber(1), eventTime: at(0), eventType: T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, workflowExecutionStartedEventAttributes: { workflowType: { name } } }];
    const withChild = [...started('group'), { eventId: Long.fromNumber(2), eventTime: at(0), eventType: T.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED }];
    const split = byWorkflowType([started('trajectory'), started('run'), withChild, started('trajectory')]);
    expect(split.run).toHaveLength(1);
    expect(split.trajectory).toHaveLength(2);
    const inline = byWorkflowType([started('run'), started('group'), started('group')]);
    expect(inline.trajectory).toHaveLength(2);
  });

  it('a group running its trajectories side by side: its activity time is its longest trajectory\'s, told apart by the calls\' summaries', () => {
    const summary = (text: string) => ({ summary: { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(text)) } });
    const ev: E[] = [];
    const add = (t: number, eventType: temporal.api.enums.v1.EventType, attrs: Partial<E> = {}) => ev.push({ eventId: Long.fromNumber(ev.length + 1), eventTime: at(t), eventType, ...attrs });
    add(0, T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, { workflowExecutionStartedEventAttributes: { workflowType: { name: 'group' } } });
    // s0 plays two turns of 1 s, s1 one turn of 1.5 s, all three calls overlapping in time.
    const call = (uid: string, from: number, to: number) => {
      add(from, T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, { activityTaskScheduledEventAttributes: { activityType: { name: 'playTurn' } }, userMetadata: summary(`${uid} · turn 0 · ≤4 tokens, then the env step`) });
      const id = ev.length;
      add(from, T.EVENT_TYPE_ACTIVITY_TASK_STARTED, { activityTaskStartedEventAttributes: { scheduledEventId: Long.fromNumber(id) } });
      add(to, T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, { activityTaskCompletedEventAttributes: { scheduledEventId: Long.fromNumber(id) } });
    };
    call('e0-p0-s0', 100, 1_100);
    call('e0-p0-s1', 100, 1_600);
    call('e0-p0-s0', 1_100, 2_100);
    add(2_200, T.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    const d = trajectoryDelay(ev, 0);
    expect(d.activity_s).toBe(2); // s0's 1 + 1 s, not the 3.5 s of all three
    expect(d.delay_s).toBe(0.2);
  });
});
