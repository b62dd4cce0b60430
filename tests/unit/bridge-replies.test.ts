// A corpus of bad engine replies, served by a local fake HTTP server (a unit test of the bridge):
// each must become the right named error (retryable EngineUnavailableError or non-retryable
// EngineRejectedError) with a bounded message, and the bridge must never retry by itself.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callChecked, EngineRejectedError, EngineUnavailableError, NON_RETRYABLE_ENGINE_ERRORS, requestJson } from '../../src/gpu-bridge';
import { streamChecked } from '../../src/gpu-bridge/http';
import { z } from 'zod';
import { EngineStateSchema } from '../../src/gpu-bridge/contracts/inference';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const NGINX_502 = '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n';
const json = (res: ServerResponse, status: number, body: string) => res.writeHead(status, { 'content-type': 'application/json' }).end(body);
const huge = 'x'.repeat(5 * 1024 * 1024);

/** Per path, what the fake engine does; `seen` counts requests per path, `closedEarly` the replies a client hung up on. */
const seen = new Map<string, number>();
const closedEarly = new Set<string>();
const routes: Record<string, Handler> = {
  '/malformed': (_, res) => json(res, 200, '{"version": 1, "backend": '),
  '/empty': (_, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(),
  '/html-200': (_, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>'),
  '/html-502': (_, res) => res.writeHead(502, { 'content-type': 'text/html' }).end(NGINX_502),
  '/html-404': (_, res) => res.writeHead(404, { 'content-type': 'text/html' }).end(`<html><body><h1>404 Not Found</h1>${huge}</body></html>`),
  '/storm': (_, res) => json(res, 503, '{"detail": "overloaded"}'),
  '/empty-500': (_, res) => res.writeHead(500).end(),
  '/huge-500': (_, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`Traceback (most recent call last):\n${huge}`),
  '/rejected-with-huge-given': (_, res) =>
    json(res, 400, JSON.stringify({ error: `prompt: Input should be a valid list`, problems: [{ field: 'prompt', message: 'Input should be a valid list', given: huge }] })),
  '/trainer-busy': (_, res) => json(res, 409, JSON.stringify({ error: 'step: train step 3 is still running; retry when it is done', problems: [], code: 'trainer_busy' })),
  '/not-paused': (_, res) => json(res, 409, JSON.stringify({ error: 'state: update_weights needs a paused server: POST /pause first', problems: [], code: 'not_paused' })),
  '/trainer-behind': (_, res) => json(res, 409, JSON.stringify({ error: 'run_id: this trainer holds no run', problems: [], code: 'trainer_behind' })),
  '/reset-before-answer': (req) => req.socket.destroy(),
  '/reset-mid-body': (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100000' });
    res.write('{"choices": [{"token_ids": [1, 2, 3', () => req.socket.destroy());
  },
  '/never-answers': () => undefined,
  '/stalls-mid-body': (_, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
    res.write('{"backend": "sim", ');
  },
  '/endless': (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    res.on('close', () => closedEarly.add(req.url!));
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  },
  // Streams: a hung server (headers and one keep-alive, then silence), and a quiet one whose keep-alives span
  // several idle timeouts before its events come.
  '/stream-hangs': (_, res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': keep-alive\n\n'),
  '/stream-quiet': (_, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let beats = 0;
    const beat = setInterval(() => {
      if (++beats <= 12) return void res.write(': keep-alive\n\n');
      clearInterval(beat);
      res.end('data: {"n": 1}\n\n: keep-alive\n\ndata: {"n": 2}\n\ndata: [DONE]\n\n');
    }, 100);
  },
  '/state-wrong-types': (_, res) => json(res, 200, JSON.stringify({ backend: 7, model: ['sim'], version: 'three', paused: 'no' })),
  '/state-huge-mismatch': (_, res) => json(res, 200, JSON.stringify(Array.from({ length: 20_000 }, (_, i) => ({ i })))),
};

let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.set(req.url!, (seen.get(req.url!) ?? 0) + 1);
    (routes[req.url!] ?? ((_, r) => json(r, 404, '{}')))(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** The error a call to `path` fails with (the test fails if it succeeds). */
async function failure(path: string, opts: Parameters<typeof requestJson>[1] = {}): Promise<Error> {
  return requestJson(`${base}${path}`, { timeoutMs: 5_000, ...opts }).then(
    (v) => {
      throw new Error(`expected ${path} to fail, got ${JSON.stringify(v).slice(0, 100)}`);
    },
    (e: Error) => e,
  );
}

const MAX_MESSAGE = 500;

function expectUnavailable(e: Error, words: RegExp) {
  expect(e).toBeInstanceOf(EngineUnavailableError);
  expect(NON_RETRYABLE_ENGINE_ERRORS).not.toContain(e.name);
  expect(e.message).toMatch(words);
  expect(e.message.length).toBeLessThan(MAX_MESSAGE);
}

function expectRejected(e: Error, status: number, words: RegExp) {
  expect(e).toBeInstanceOf(EngineRejectedError);
  expect(NON_RETRYABLE_ENGINE_ERRORS).toContain(e.name);
  expect((e as EngineRejectedError).status).toBe(status);
  expect(e.message).toMatch(words);
  expect(e.message.length).toBeLessThan(MAX_MESSAGE);
}

describe('bad engine replies become named errors with bounded messages', () => {
  it('JSON cut short or empty on a 200 is retryable: a whole answer may come next time', async () => {
    expectUnavailable(await failure('/malformed'), /HTTP 200 with JSON cut short or garbled: \{"version": 1, "backend":$/);
    expectUnavailable(await failure('/empty'), /HTTP 200 with an empty body$/);
  });

  it('an HTML page is a proxy in the way: 5xx retryable, 4xx and 2xx not; the message is its text, not its markup', async () => {
    const gateway = await failure('/html-502');
    expectUnavailable(gateway, /HTTP 502 502 Bad Gateway 502 Bad Gateway nginx\/1\.25\.3$/);
    expectRejected(await failure('/html-404'), 404, /HTTP 404 404 Not Found x+… \[cut: \d+ characters in all\]$/);
    expectRejected(await failure('/html-200'), 502, /answered text\/html, not JSON \(is this an engine's url\?\): Welcome to nginx!$/);
  });

  it('a storm of 5xx gives one retryable error per call, and the bridge never retries by itself', async () => {
    for (let i = 0; i < 50; i++) expectUnavailable(await failure('/storm'), /HTTP 503 \{"detail": "overloaded"\}/);
    expect(seen.get('/storm')).toBe(50);
    expectUnavailable(await failure('/empty-500'), /HTTP 500 \(empty body\)$/);
    expectUnavailable(await failure('/huge-500'), /HTTP 500 Traceback \(most recent call last\): x+… \[cut: 5242915 characters in all\]$/);
  });

  it("a 4xx quotes the engine's own error, not its (huge) echo of the input", async () => {
    expectRejected(await failure('/rejected-with-huge-given', { body: {} }), 400, /HTTP 400 prompt: Input should be a valid list$/);
  });

  it('a 409 that means "not now" (a busy trainer, a server resumed under a sync) is retryable; any other 409 keeps its code and is not', async () => {
    for (const path of ['/trainer-busy', '/not-paused']) {
      const e = await failure(path, { body: {} });
      expect([(e as Error).name, NON_RETRYABLE_ENGINE_ERRORS.includes((e as Error).name)]).toEqual(['EngineBusyError', false]);
    }
    const behind = await failure('/trainer-behind', { body: {} });
    expectRejected(behind, 409, /holds no run$/);
    expect((behind as EngineRejectedError).code).toBe('trainer_behind');
  });

  it('a connection reset before or during the body is retryable', async () => {
    expectUnavailable(await failure('/reset-before-answer'), /: (UND_ERR_SOCKET|ECONNRESET)|other side closed|socket/i);
    expectUnavailable(await failure('/reset-mid-body'), /: (UND_ERR_SOCKET|ECONNRESET)|terminated|other side closed/i);
  });

  it('no whole answer within the timeout is retryable, whether the headers or the body never come', async () => {
    expectUnavailable(await failure('/never-answers', { timeoutMs: 100 }), /: no whole answer within 100 ms$/);
    expectUnavailable(await failure('/stalls-mid-body', { timeoutMs: 100 }), /: no whole answer within 100 ms$/);
  });

  it('a stream silent past its idle timeout is a hung server: retryable, like a dead one; keep-alives keep a quiet one open and never reach the caller', async () => {
    const events: unknown[] = [];
    const stream = (path: string) => streamChecked(base, path, z.object({ n: z.number() }), (e) => events.push(e), { timeoutMs: 60_000, idleTimeoutMs: 400, body: {} });
    expectUnavailable(await stream('/stream-hangs').then(() => new Error('no failure'), (e: Error) => e), /: not a byte for 400 ms \(the server is hung\)$/);
    expect(events).toEqual([]);
    await stream('/stream-quiet'); // 1.2 s of keep-alives, 100 ms apart, under a 400 ms idle timeout
    expect(events).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('the caller cancelling is not an engine failure: its reason passes through', async () => {
    const cancel = new AbortController();
    const call = failure('/never-answers', { signal: cancel.signal });
    cancel.abort(new Error('activity cancelled'));
    expect((await call).message).toBe('activity cancelled');
  });

  it('a reply over maxResponseBytes is refused without reading the rest', async () => {
    expectRejected(await failure('/endless', { maxResponseBytes: 1024 * 1024 }), 502, /HTTP 200 reply body passed 1048576 bytes \(maxResponseBytes\); not read further$/);
    const deadline = Date.now() + 10_000; // guards a hang only: the server sees the hang-up once the client stops reading
    while (!closedEarly.has('/endless') && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    expect(closedEarly.has('/endless')).toBe(true);
  });

  it('a reply of the wrong types breaks the contract: non-retryable, and the message stays short however many fields are wrong', async () => {
    for (const path of ['/state-wrong-types', '/state-huge-mismatch']) {
      const e = await callChecked(base, path, EngineStateSchema).then(
        () => new Error(`expected ${path} to break the contract`),
        (err: Error) => err,
      );
      expectRejected(e, 502, /response does not match the contract: /);
    }
  });
});
