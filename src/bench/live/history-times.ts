/**
 * Timing read back from Temporal histories, for the live benches (W7's orchestration delay, W8's tables): each
 * activity's execution time, and the nearest-rank distribution their reports quote.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';

export interface Execution {
  type: string;
  seconds: number;
  input: unknown;
  /** Its summary in the UI (workflows/metadata.ts), when it was given one. */
  summary?: string;
}

/** A workflow's activities in scheduling order, each with its execution time (started to completed) and input. */
export function executions(events: readonly temporal.api.history.v1.IHistoryEvent[]): Execution[] {
  const scheduled = new Map<string, { type: string; input: unknown; summary?: string }>();
  const started = new Map<string, number>();
  const done: (Execution & { order: number })[] = [];
  for (const e of events) {
    const id = String(e.eventId);
    const s = e.activityTaskScheduledEventAttributes;
    if (s) {
      const summary = e.userMetadata?.summary ? defaultPayloadConverter.fromPayload<string>(e.userMetadata.summary) : undefined;
      scheduled.set(id, { type: s.activityType?.name ?? '', input: s.input?.payloads?.[0] ? defaultPayloadConverter.fromPayload(s.input.payloads[0]) : undefined, ...(summary ? { summary } : {}) });
    }
    const st = e.activityTaskStartedEventAttributes;
    if (st && e.eventTime) started.set(String(st.scheduledEventId), tsToMs(e.eventTime));
    const c = e.activityTaskCompletedEventAttributes;
    if (c && e.eventTime) {
      const key = String(c.scheduledEventId);
      const at = started.get(key);
      const what = scheduled.get(key);
      if (at !== undefined && what) done.push({ ...what, seconds: (tsToMs(e.eventTime) - at) / 1000, order: Number(c.scheduledEventId) });
    }
  }
  return done.sort((a, b) => a.order - b.order).map(({ order: _order, ...x }) => x);
}

/** Median, p90, p99 and max of some values, with their count; `unit` suffixes the keys (median_s for seconds). */
export function distribution(values: readonly number[], unit = '_s') {
  const s = [...values].sort((a, b) => a - b);
  const at = (q: number) => (s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : null);
  const r = (x: number | null) => (x === null ? null : Math.round(x * 1000) / 1000);
  return { n: s.length, [`median${unit}`]: r(at(0.5)), [`p90${unit}`]: r(at(0.9)), [`p99${unit}`]: r(at(0.99)), [`max${unit}`]: r(s.length ? s[s.length - 1]! : null) };
}
