/**
 * The claim check, resolved for display: workflows carry sample-store keys,
 * not texts (a trajectory's result names its `sampleKey`). When the UI asks
 * the codec server to decode such a payload, this adds the trajectory's
 * transcript from the store: each message cut with a marker, the reward,
 * the weight versions, and a link to the full text.
 */
import type { TrajectoryContext } from '../activities/rollout';
import type { SampleStore } from '../store';
import { checkKey } from '../store';
import { cut } from '../workflows/metadata';

/** Characters of each message shown inline in a decoded payload. */
export const TRANSCRIPT_TEXT_CHARS = 2000;

/** `<run>/samples/<uid>.json` (ids.sampleKey) -> `<run>/trajectories/<uid>.json` (ids.contextKey). */
const SAMPLE_KEY = /^(.+)\/samples\/([^/]+)\.json$/;

export function contextKeyOfSample(sampleKey: string): string | undefined {
  const m = SAMPLE_KEY.exec(sampleKey);
  return m ? `${m[1]}/trajectories/${m[2]}.json` : undefined;
}

export interface Transcript {
  /** Where the whole text is: the codec server's /text/<context key>. */
  full_text: string;
  reward?: number;
  versions: number[];
  messages: { role: string; content: string }[];
}

interface StoredSample {
  reward?: number;
}

/**
 * The transcript behind `sampleKey`, or undefined when the key is not a sample's or the store no longer has it
 * (a payload decodes as it is, never fails, for a missing transcript).
 */
export async function transcriptOf(store: SampleStore, sampleKey: string, baseUrl: string): Promise<Transcript | undefined> {
  const contextKey = contextKeyOfSample(sampleKey);
  if (!contextKey) return undefined;
  try {
    checkKey(contextKey);
    const ctx = await store.get<TrajectoryContext>(contextKey);
    const sample = await store.get<StoredSample>(sampleKey).catch(() => undefined);
    const full = `${baseUrl}/text/${contextKey}`;
    return {
      full_text: full,
      ...(sample?.reward !== undefined ? { reward: sample.reward } : {}),
      versions: [...new Set(ctx.version_spans.map((s) => s.version))],
      messages: ctx.messages.map((m) => ({ role: m.role, content: cut(m.content, TRANSCRIPT_TEXT_CHARS, full) })),
    };
  } catch {
    return undefined;
  }
}

/** The whole transcript as plain text, for the /text link. */
export async function fullText(store: SampleStore, contextKey: string): Promise<string> {
  const ctx = await store.get<TrajectoryContext>(checkKey(contextKey));
  return ctx.messages.map((m) => `=== ${m.role}\n${m.content}\n`).join('\n');
}
