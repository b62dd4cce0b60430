/**
 * What a workflow's history says about the code that ran it: workflow tasks
 * that failed on a nondeterminism error, the markers `patched()` wrote (and
 * which worker wrote each), and the memo fields it upserted.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
type Event = temporal.api.history.v1.IHistoryEvent;

const NONDETERMINISM = temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR;
const decode = (p: temporal.api.common.v1.IPayload | null | undefined): unknown => (p ? defaultPayloadConverter.fromPayload(p) : undefined);
const events = (h: History): Event[] => h.events ?? [];

/** Every execution whose search attributes match `query`, each with its history. */
export async function historiesOf(client: Client, query: string): Promise<{ workflowId: string; history: History }[]> {
  const found: { workflowId: string; history: History }[] = [];
  for await (const w of client.workflow.list({ query })) found.push({ workflowId: w.workflowId, history: await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory() });
  return found;
}

/** The workflow tasks that failed because the code did not issue the commands the history recorded: "<event id>: <message>". */
export function nondeterminismFailures(h: History): string[] {
  return events(h).flatMap((e) => {
    const f = e.workflowTaskFailedEventAttributes;
    return f?.cause === NONDETERMINISM ? [`${String(e.eventId)}: ${f.failure?.message ?? ''}`] : [];
  });
}

/** The markers `patched(patchId)` wrote, each with its event id and the identity of the worker whose workflow task wrote it. */
export function patchMarkers(h: History, patchId: string): { eventId: number; identity: string }[] {
  const completedBy = new Map(events(h).flatMap((e) => (e.workflowTaskCompletedEventAttributes ? [[Number(e.eventId), e.workflowTaskCompletedEventAttributes.identity ?? '']] : [])));
  return events(h).flatMap((e) => {
    const m = e.markerRecordedEventAttributes;
    // The SDK's patch marker: name core_patch, details["patch-data"] = {id, deprecated}.
    if (m?.markerName !== 'core_patch' || (decode(m.details?.['patch-data']?.payloads?.[0]) as { id?: string } | undefined)?.id !== patchId) return [];
    return [{ eventId: Number(e.eventId), identity: completedBy.get(Number(m.workflowTaskCompletedEventId)) ?? '' }];
  });
}

/** Each memo upsert that set `field`: its event id and the value. */
export function memoUpserts(h: History, field: string): { eventId: number; value: unknown }[] {
  return events(h).flatMap((e) => {
    const fields = e.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields;
    return fields?.[field] ? [{ eventId: Number(e.eventId), value: decode(fields[field]) }] : [];
  });
}

/** Each activity the workflow scheduled: its type and id, the task queue it went to, and who ran it (the worker of its last attempt) with how it closed. */
export function activityPlacements(h: History): { type: string; activityId: string; taskQueue: string; startedBy: string[]; attempt: number; closed?: 'completed' | 'failed' | 'timedOut' | 'canceled' }[] {
  const all = events(h);
  const started = new Map(all.flatMap((e) => (e.activityTaskStartedEventAttributes ? [[Number(e.activityTaskStartedEventAttributes.scheduledEventId), e.activityTaskStartedEventAttributes]] : [])));
  const closed = new Map<number, 'completed' | 'failed' | 'timedOut' | 'canceled'>();
  for (const e of all) {
    const [attrs, how] = e.activityTaskCompletedEventAttributes ? [e.activityTaskCompletedEventAttributes, 'completed' as const] : e.activityTaskFailedEventAttributes ? [e.activityTaskFailedEventAttributes, 'failed' as const] : e.activityTaskTimedOutEventAttributes ? [e.activityTaskTimedOutEventAttributes, 'timedOut' as const] : e.activityTaskCanceledEventAttributes ? [e.activityTaskCanceledEventAttributes, 'canceled' as const] : [undefined, undefined];
    if (attrs && how) closed.set(Number(attrs.scheduledEventId), how);
  }
  return all.flatMap((e) => {
    const s = e.activityTaskScheduledEventAttributes;
    if (!s) return [];
    const id = Number(e.eventId);
    const run = started.get(id);
    const how = closed.get(id);
    return [{ type: s.activityType?.name ?? '', activityId: s.activityId ?? '', taskQueue: s.taskQueue?.name ?? '', startedBy: run ? [run.identity ?? ''] : [], attempt: run?.attempt ?? 0, ...(how ? { closed: how } : {}) }];
  });
}

/** The identities of the workers whose workflow tasks the workflow completed. */
export function workflowTaskIdentities(h: History): string[] {
  return events(h).flatMap((e) => (e.workflowTaskCompletedEventAttributes ? [e.workflowTaskCompletedEventAttributes.identity ?? ''] : []));
}
