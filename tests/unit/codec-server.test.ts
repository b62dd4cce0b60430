/**
 * The codec server over real HTTP (an ephemeral port): Temporal's remote codec
 * protocol, the transcripts it adds for display, the full-text link, and CORS
 * for the UI's origin. The payload codec here is a stand-in that marks what it
 * wrapped, so the order of encode and decode is visible.
 */
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCodecServer } from '../../src/codec/server';
import { TRANSCRIPT_TEXT_CHARS } from '../../src/codec/transcripts';
import { DirectorySampleStore } from '../../src/store';
import { contextKey, sampleKey } from '../../src/core';

/** Wraps each payload whole into the data of a `binary/wrapped` payload (and back). */
const wrapping: PayloadCodec = {
  encode: async (ps) => ps.map((p) => ({ metadata: { encoding: Buffer.from('binary/wrapped') }, data: Buffer.from(JSON.stringify({ m: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])), d: Buffer.from(p.data ?? []).toString('base64') })) })),
  decode: async (ps) =>
    ps.map((p) => {
      if (Buffer.from(p.metadata?.encoding ?? []).toString() !== 'binary/wrapped') return p;
      const { m, d } = JSON.parse(Buffer.from(p.data!).toString()) as { m: Record<string, string>; d: string };
      return { metadata: Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Buffer.from(v, 'base64')])), data: Buffer.from(d, 'base64') };
    }),
};

const UI = 'http://127.0.0.1:8233';
const store = new DirectorySampleStore(mkdtempSync(path.join(tmpdir(), 'codec-store-')));
const server = createCodecServer({ codecs: [wrapping], store, uiOrigin: UI, baseUrl: 'http://codec.test' });
let base: string;

const asJson = (p: Payload) => ({ metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])), data: Buffer.from(p.data ?? []).toString('base64') });
const fromJson = (p: { metadata: Record<string, string>; data: string }): Payload => ({ metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])), data: Buffer.from(p.data, 'base64') });

async function call(route: '/encode' | '/decode', payloads: Payload[]): Promise<Payload[]> {
  const r = await fetch(`${base}${route}`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Namespace': 'default', Origin: UI }, body: JSON.stringify({ payloads: payloads.map(asJson) }) });
  expect(r.status).toBe(200);
  expect(r.headers.get('access-control-allow-origin')).toBe(UI);
  return ((await r.json()) as { payloads: { metadata: Record<string, string>; data: string }[] }).payloads.map(fromJson);
}

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const long = 'z'.repeat(TRANSCRIPT_TEXT_CHARS + 5);
  await store.put(contextKey('r1', 'e0-p3-s1'), { messages: [{ role: 'user', content: 'What is 7+5?' }, { role: 'assistant', content: `<answer>12</answer>${long}` }], prompt_ids: [], response_ids: [], old_logprobs: [], loss_mask: [], version_spans: [{ version: 4, start: 0, end: 3 }, { version: 5, start: 3, end: 9 }], aborts: 0 });
  await store.put(sampleKey('r1', 'e0-p3-s1'), { uid: 'e0-p3-s1', reward: 1 });
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('codec server (Temporal remote codec protocol)', () => {
  it('encode then decode gives back the payloads the codecs wrapped', async () => {
    const original = [defaultPayloadConverter.toPayload({ prompt: 'secret prompt' }), defaultPayloadConverter.toPayload('plain')];
    const encoded = await call('/encode', original);
    expect(encoded.map((p) => Buffer.from(p.metadata!.encoding!).toString())).toEqual(['binary/wrapped', 'binary/wrapped']);
    const decoded = await call('/decode', encoded);
    expect(decoded.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([{ prompt: 'secret prompt' }, 'plain']);
  });

  it('a decoded trajectory result carries its transcript from the store: messages cut with a link, reward, versions', async () => {
    const result = { uid: 'e0-p3-s1', reward: 1, sampleKey: sampleKey('r1', 'e0-p3-s1') };
    const [decoded] = await call('/decode', await call('/encode', [defaultPayloadConverter.toPayload(result)]));
    const shown = defaultPayloadConverter.fromPayload<typeof result & { transcript: { full_text: string; reward: number; versions: number[]; messages: { role: string; content: string }[] } }>(decoded!);
    expect(shown).toMatchObject(result);
    const link = `http://codec.test/text/${contextKey('r1', 'e0-p3-s1')}`;
    expect(shown.transcript).toMatchObject({ full_text: link, reward: 1, versions: [4, 5] });
    expect(shown.transcript.messages[0]).toEqual({ role: 'user', content: 'What is 7+5?' });
    expect(shown.transcript.messages[1]!.content.startsWith('<answer>12</answer>')).toBe(true);
    expect(shown.transcript.messages[1]!.content.endsWith(`… [cut: ${19 + 5} more chars; full text: ${link}]`)).toBe(true);
  });

  it('a group result carries the transcripts of its samples that the store has', async () => {
    const group = { epoch: 0, position: 3, storeKeys: [sampleKey('r1', 'e0-p3-s0'), sampleKey('r1', 'e0-p3-s1')] };
    const [decoded] = await call('/decode', [defaultPayloadConverter.toPayload(group)]);
    const shown = defaultPayloadConverter.fromPayload<typeof group & { transcripts: { reward: number }[] }>(decoded!);
    expect(shown.transcripts).toHaveLength(1); // s0 was never stored
    expect(shown.transcripts[0]).toMatchObject({ reward: 1, versions: [4, 5] });
  });

  it('payloads without a known sample decode unchanged', async () => {
    const gone = defaultPayloadConverter.toPayload({ sampleKey: sampleKey('r1', 'e9-p9-s9') });
    const [decoded] = await call('/decode', [gone]);
    expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual({ sampleKey: sampleKey('r1', 'e9-p9-s9') });
  });

  it('serves a trajectory\'s full text, and nothing else of the store', async () => {
    const full = await fetch(`${base}/text/${contextKey('r1', 'e0-p3-s1')}`);
    expect(full.status).toBe(200);
    const text = await full.text();
    expect(text).toContain('=== user\nWhat is 7+5?');
    expect(text).toContain('z'.repeat(TRANSCRIPT_TEXT_CHARS + 5));
    expect((await fetch(`${base}/text/${sampleKey('r1', 'e0-p3-s1')}`)).status).toBe(404);
    expect((await fetch(`${base}/text/r1/trajectories/..%2F..%2Fetc%2Fpasswd.json`)).status).toBe(404);
  });

  it('answers the browser\'s preflight for the UI origin; a body that is not the protocol\'s is a 400', async () => {
    const pre = await fetch(`${base}/decode`, { method: 'OPTIONS', headers: { Origin: UI, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type,x-namespace' } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-headers')).toContain('X-Namespace');
    const bad = await fetch(`${base}/decode`, { method: 'POST', body: '{"nope": 1}' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('expected {"payloads": [...]}');
  });
});
