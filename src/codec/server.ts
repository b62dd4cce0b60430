/**
 * rollflow's codec server: Temporal's remote codec protocol (POST /encode and
 * /decode with `{payloads: [{metadata, data}]}`, bytes in base64), which the
 * Temporal UI calls to show payloads (`--ui-codec-endpoint`), plus GET
 * /text/<key> for a trajectory's full text.
 *
 * Decoding runs the payload codecs (payload encryption, when configured),
 * then, for display only, adds to every trajectory result (a JSON object
 * naming a `sampleKey`) the transcript it refers to in the sample store, and
 * to every group result (naming `storeKeys`) the transcripts of its samples.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';
import type { SampleStore } from '../store';
import { fullText, transcriptOf } from './transcripts';

export interface CodecServerOptions {
  /** Applied in order when encoding, in reverse when decoding (as a data converter does). */
  codecs: PayloadCodec[];
  /** Where transcripts are read from; without one, decoding only runs the codecs. */
  store?: SampleStore;
  /** The UI's origin (scheme://host:port): the only origin the browser may call from. */
  uiOrigin: string;
  /** This server's own base URL, for the full-text links. */
  baseUrl: string;
}

interface JsonPayload {
  metadata?: Record<string, string> | null;
  data?: string | null;
}

const fromJson = ({ metadata, data }: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(data ?? '', 'base64'),
});

const toJson = ({ metadata, data }: Payload): JsonPayload => ({
  metadata: Object.fromEntries(Object.entries(metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  data: Buffer.from(data ?? new Uint8Array()).toString('base64'),
});

/** Transcripts added to one group result: a large group shows its first ones. */
const MAX_GROUP_TRANSCRIPTS = 8;

const isJson = (p: Payload) => Buffer.from(p.metadata?.encoding ?? new Uint8Array()).toString() === 'json/plain';

/** A trajectory result (or any JSON object naming a sampleKey) with its transcript added; other payloads as they are. */
async function withTranscript(p: Payload, store: SampleStore, baseUrl: string): Promise<Payload> {
  if (!isJson(p)) return p;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(p.data ?? new Uint8Array()).toString('utf8'));
  } catch {
    return p;
  }
  if (typeof value !== 'object' || value === null) return p;
  const { sampleKey, storeKeys } = value as { sampleKey?: unknown; storeKeys?: unknown };
  if (typeof sampleKey === 'string') {
    const transcript = await transcriptOf(store, sampleKey, baseUrl);
    return transcript ? { ...p, data: Buffer.from(JSON.stringify({ ...value, transcript })) } : p;
  }
  // A group's result (and its groupDone signal) lists its samples' keys.
  if (Array.isArray(storeKeys) && storeKeys.every((k) => typeof k === 'string')) {
    const found = await Promise.all((storeKeys as string[]).slice(0, MAX_GROUP_TRANSCRIPTS).map((k) => transcriptOf(store, k, baseUrl)));
    const transcripts = found.filter((t) => t !== undefined);
    return transcripts.length > 0 ? { ...p, data: Buffer.from(JSON.stringify({ ...value, transcripts })) } : p;
  }
  return p;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function createCodecServer(opts: CodecServerOptions): Server {
  const encode = async (ps: Payload[]) => {
    let out = ps;
    for (const c of opts.codecs) out = await c.encode(out);
    return out;
  };
  const decode = async (ps: Payload[]) => {
    let out = ps;
    for (const c of [...opts.codecs].reverse()) out = await c.decode(out);
    const { store } = opts;
    return store ? Promise.all(out.map((p) => withTranscript(p, store, opts.baseUrl))) : out;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    res.setHeader('Access-Control-Allow-Origin', opts.uiOrigin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    res.setHeader('Access-Control-Allow-Methods', 'POST, GET, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
    const url = new URL(req.url ?? '/', opts.baseUrl);
    if (req.method === 'OPTIONS') return void res.writeHead(204).end();
    if (req.method === 'POST' && (url.pathname === '/encode' || url.pathname === '/decode')) {
      let payloads: Payload[];
      try {
        const body = JSON.parse(await readBody(req)) as { payloads?: JsonPayload[] };
        if (!Array.isArray(body.payloads)) throw new Error('expected {"payloads": [...]}');
        payloads = body.payloads.map(fromJson);
      } catch (e) {
        return void res.writeHead(400, { 'Content-Type': 'text/plain' }).end(`bad request: ${(e as Error).message}`);
      }
      const out = await (url.pathname === '/encode' ? encode : decode)(payloads);
      return void res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ payloads: out.map(toJson) }));
    }
    if (req.method === 'GET' && url.pathname.startsWith('/text/') && opts.store) {
      const key = decodeURIComponent(url.pathname.slice('/text/'.length));
      // Only trajectory transcripts: the rest of the store (batches, weights) is not for the browser.
      if (!/\/trajectories\/[^/]+\.json$/.test(key)) return void res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not a trajectory');
      try {
        return void res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end(await fullText(opts.store, key));
      } catch (e) {
        return void res.writeHead(404, { 'Content-Type': 'text/plain' }).end((e as Error).message);
      }
    }
    if (req.method === 'GET' && url.pathname === '/health') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
  };

  return createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      // A codec that fails (a wrong encryption key) says why, in one line, to the UI.
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end(`codec error: ${(e as Error).message}`);
    });
  });
}
