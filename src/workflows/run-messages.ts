/** The run workflow's messages (run.ts handles them): groups signal groupDone, operators the rest. Apart from
 * run.ts so that a group can send its result without importing the workflow that starts it. */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { GroupResult } from './run-buffer';
import type { RunStatus } from './run-input';

/** Sent by each group to its run when its samples are done; idempotent by (epoch, position). */
export const groupDone = defineSignal<[GroupResult]>('groupDone');
export const suspend = defineSignal('suspend');
export const resume = defineSignal('resume');
/** Operator: end the run cleanly after the step in progress: no more dispatch, a checkpoint, groups in flight cancelled. */
export const cancelRun = defineSignal('cancelRun');
export const status = defineQuery<RunStatus>('status');
/** Operator update: load external weights on every inference server between train steps (pause -> update -> resume,
 * like a step's sync). The trainer keeps its own weights, so the next train step's sync replaces these. */
export const syncWeightsUpdate = defineUpdate<{ aborted: number; version: number }, [{ path: string }]>('syncWeights');
