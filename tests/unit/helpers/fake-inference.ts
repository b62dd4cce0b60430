/**
 * A fake inference server for the bridge's unit tests: the inference role's
 * wire protocol (streamed completions and chat, min_version, pause/update/
 * resume, /health, /state) with scripted tokens. The token at position p of
 * the whole sequence (prompt + generated) is 1000 + p, so a generation
 * continued from its partial tokens anywhere reads 1000+L, 1000+L+1, … (L the
 * first prompt's length): a lost or repeated token shows. `dieAfter` tokens
 * of a request, it destroys every connection and stops listening, as a
 * SIGKILLed server does; `restart` listens again on the same port with its
 * launch weights (version 0).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export const CHAT_PROMPT = [1, 2, 3];
export const CONTINUATION = [7, 8];

export class FakeInference {
  version = 0;
  paused = false;
  /** Every request, in order: method and path, and the body of POSTs. */
  readonly requests: { path: string; body: Record<string, unknown> }[] = [];
  /** update_weights answers 404 (the weights path is missing on this host). */
  missingWeights = false;
  /** Kill the server once this many tokens of one generate request were sent. */
  dieAfter: number | undefined;
  private server: http.Server;
  private sockets = new Set<Socket>();
  port = 0;

  constructor() {
    this.server = this.create();
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(port = 0): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** Dies: open connections are reset, new ones refused. */
  kill(): void {
    for (const s of this.sockets) s.destroy();
    this.server.close();
  }

  /** Comes back on the same port with its launch weights, as a restarted process does. */
  async restart(): Promise<void> {
    this.version = 0;
    this.paused = false;
    this.dieAfter = undefined;
    this.server = this.create();
    await this.start(this.port);
  }

  async close(): Promise<void> {
    this.kill();
  }

  paths(): string[] {
    return this.requests.map((r) => r.path);
  }

  private create(): http.Server {
    const server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => void this.handle(req.url ?? '', raw ? (JSON.parse(raw) as Record<string, unknown>) : {}, res));
    });
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    return server;
  }

  private json(res: http.ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private state() {
    return { backend: 'fake', model: 'fake', version: this.version, paused: this.paused, pause_mode: this.paused ? 'wait' : null, running: 0, waiting: 0, max_batch: 8 };
  }

  private async handle(path: string, body: Record<string, unknown>, res: http.ServerResponse): Promise<void> {
    this.requests.push({ path, body });
    switch (path) {
      case '/health':
        return this.json(res, 200, { status: 'ok', role: 'inference', backend: 'fake', version: '0', pid: 1, uptime_s: 1 });
      case '/state':
        return this.json(res, 200, this.state());
      case '/pause':
        this.paused = true;
        return this.json(res, 200, { mode: body.mode, aborted: 0, frozen: 0, version: this.version });
      case '/resume':
        this.paused = false;
        return this.json(res, 200, this.state());
      case '/update_weights': {
        if (this.missingWeights) return this.json(res, 404, { error: `path: ${String(body.path)} does not exist`, problems: [{ field: 'path', message: 'does not exist', given: body.path }] });
        if (!this.paused) return this.json(res, 409, { error: 'state: not paused', problems: [{ field: 'state', message: 'not paused', given: 'running' }] });
        const previous = this.version;
        this.version = body.version as number;
        return this.json(res, 200, { version: this.version, previous_version: previous, load_seconds: 0 });
      }
      case '/v1/chat/continuation':
        return this.json(res, 200, { token_ids: CONTINUATION });
      case '/v1/completions':
      case '/v1/chat/completions':
        return this.generate(path, body, res);
      default:
        return this.json(res, 404, { error: `no ${path}`, problems: [] });
    }
  }

  private async generate(path: string, body: Record<string, unknown>, res: http.ServerResponse): Promise<void> {
    const minVersion = body.min_version as number | undefined;
    if (minVersion !== undefined && this.version < minVersion) {
      const error = `min_version: version ${this.version} loaded, ${minVersion} asked for`;
      return this.json(res, 409, { error, code: 'version_behind', version: this.version, min_version: minVersion, problems: [{ field: 'min_version', message: error, given: minVersion }] });
    }
    const chat = path === '/v1/chat/completions';
    const prompt = chat ? CHAT_PROMPT : (body.prompt as number[]);
    const n = (body.n as number | undefined) ?? 1;
    const maxTokens = body.max_tokens as number;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (chunk: unknown) => new Promise<void>((resolve) => res.write(`data: ${JSON.stringify(chunk)}\n\n`, () => resolve()));
    const head = { id: 'x', created: 0, model: 'fake' };
    if (chat) await send({ ...head, object: 'chat.completion.chunk', prompt_token_ids: prompt, choices: [] });
    for (let k = 0; k < maxTokens; k++) {
      if (this.dieAfter !== undefined && k >= this.dieAfter) return this.kill();
      const finish = k === maxTokens - 1 ? 'length' : null;
      const choices = Array.from({ length: n }, (_, index) => {
        const tokens = { index, token_ids: [1000 + prompt.length + k], logprobs: [-0.5], finish_reason: finish, version_spans: [{ version: this.version, start: k, end: k + 1 }] };
        return chat ? { ...tokens, delta: { role: 'assistant', content: null } } : { ...tokens, text: null };
      });
      await send({ ...head, object: chat ? 'chat.completion.chunk' : 'text_completion.chunk', choices });
    }
    res.end('data: [DONE]\n\n');
  }
}
