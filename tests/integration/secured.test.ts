/**
 * A run over a secured connection with encrypted payloads. The dev server the
 * Temporal CLI builds serves no TLS, so a TLS front (helpers/tls-proxy.ts,
 * node:tls with openssl-made certificates) requires a client certificate
 * signed by the test CA and pipes to it: the worker, the CLI and the codec
 * server reach Temporal only through it. Payloads are sealed with AES-256-GCM
 * (temporal.encryption): the history Temporal stores holds no prompt text,
 * the key opens it, another key says which key it needs, and the codec
 * server decrypts for the UI. Misconfigured TLS fails in one line naming
 * what is wrong.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmCodec, ENCRYPTED_ENCODING, EncryptionKeyError } from '../../src/codec/encryption';
import { freePort, TestDevServer, until } from './helpers/dev-server';
import { makeCerts, startTlsProxy, type Certs, type TlsProxy } from './helpers/tls-proxy';

let server: TestDevServer;
let certs: Certs;
let proxy: TlsProxy;
let config: string;
let raw: Client;
let codecUrl: string;
const key = randomBytes(32);

/** The run config, with `tls` in place of the secured one (the broken variants). */
const yaml = (tls: string, ports: number[]) => `
exp_name: sec
max_steps: 2
rollout_batch_size: 2
num_return_sequences_in_group: 2
is_num_return_sequences_expand: true
custom_envs:
  arith: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 8 }
run_dir: ${server.stateDir}/run
temporal:
  address: "${proxy.address}"
  embedded: false
  task_queue: secured
  ui_url: "http://127.0.0.1:${server.uiPort}"
  codec_url: "${codecUrl}"
  tls: ${tls}
  encryption: { key_file: "${path.join(server.stateDir, 'payload.key')}" }
engines:
  inference: [{ url: "http://127.0.0.1:${ports[0]}", backend: sim }]
  trainer: { url: "http://127.0.0.1:${ports[1]}", backend: sim }
  env: { url: "http://127.0.0.1:${ports[2]}" }
`;
let ports: number[];
const configWith = (name: string, tls: string) => {
  const file = path.join(server.stateDir, `${name}.yaml`);
  writeFileSync(file, yaml(tls, ports));
  return file;
};
const rollflow = (...args: string[]) => server.rollflow(args, 300_000);

beforeAll(async () => {
  server = await TestDevServer.create();
  server.start();
  certs = makeCerts();
  proxy = await startTlsProxy(certs, { port: server.port }, true);
  codecUrl = `http://127.0.0.1:${await freePort()}`;
  ports = [await freePort(), await freePort(), await freePort()];
  writeFileSync(path.join(server.stateDir, 'payload.key'), key.toString('hex'));
  config = configWith('secured', `{ ca_file: "${certs.ca}", cert_file: "${certs.clientCert}", key_file: "${certs.clientKey}" }`);
  const up = rollflow('dev', 'up', config);
  expect(up.status, up.stderr).toBe(0);
  raw = new Client({ connection: await Connection.connect({ address: server.address }) }); // plaintext, straight to the server, no codec
});

afterAll(async () => {
  await raw?.connection.close();
  if (config) rollflow('dev', 'down', config);
  await proxy?.close();
  server?.stop();
});

const encoding = (p: Payload) => Buffer.from(p.metadata?.encoding ?? new Uint8Array()).toString();

/** Every payload of a workflow's inputs and results, as Temporal stores them. */
async function storedPayloads(workflowId: string): Promise<Payload[]> {
  const events = ((await raw.workflow.getHandle(workflowId).fetchHistory()).events ?? []) as temporal.api.history.v1.IHistoryEvent[];
  return events.flatMap((e) => [
    ...(e.workflowExecutionStartedEventAttributes?.input?.payloads ?? []),
    ...(e.workflowExecutionCompletedEventAttributes?.result?.payloads ?? []),
    ...(e.activityTaskScheduledEventAttributes?.input?.payloads ?? []),
    ...(e.activityTaskCompletedEventAttributes?.result?.payloads ?? []),
    ...(e.markerRecordedEventAttributes?.details?.result?.payloads ?? []), // a local activity's result (the reset, the sample write)
  ]) as Payload[];
}

describe('mTLS to Temporal and encrypted payloads', () => {
  it('a run completes with the worker and the CLI on mTLS; Temporal stores ciphertext only; the key (and the codec server) open it', async () => {
    const r = rollflow('run', config, '--wait', '--run-id', 'sec');
    expect(r.status, r.stderr).toBe(0);
    expect(proxy.authorizedClients).toBeGreaterThanOrEqual(2); // the worker's connection and the CLI's, each with the client certificate

    const trajectory = 'sec/e0-p0/s0';
    const stored = await storedPayloads(trajectory);
    expect(stored.length).toBeGreaterThan(4);
    expect(stored.map(encoding).filter((e) => e !== ENCRYPTED_ENCODING)).toEqual([]);

    const codec = new AesGcmCodec(key);
    const opened = await codec.decode(stored);
    const values = opened.map((p) => defaultPayloadConverter.fromPayload<Record<string, unknown>>(p));
    const prompt = values.map((v) => v.observation).find((o): o is string => typeof o === 'string' && o.length > 0)!;
    expect(prompt).toBeDefined();
    const storedText = Buffer.concat(stored.map((p) => Buffer.from(p.data ?? new Uint8Array()))).toString('latin1');
    expect(storedText).not.toContain(prompt);

    // Another key says which key the payload needs.
    const other = new AesGcmCodec(randomBytes(32));
    await expect(other.decode(stored.slice(0, 1))).rejects.toThrow(EncryptionKeyError);
    await expect(other.decode(stored.slice(0, 1))).rejects.toThrow(`payload encrypted with key ${codec.keyId}, this key is ${other.keyId}`);

    // The codec server (started by dev up with the key) decrypts for the UI.
    const asJson = (p: Payload) => ({ metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])), data: Buffer.from(p.data ?? new Uint8Array()).toString('base64') });
    const res = await fetch(`${codecUrl}/decode`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ payloads: stored.map(asJson) }) });
    expect(res.status).toBe(200);
    const decoded = ((await res.json()) as { payloads: { metadata: Record<string, string> }[] }).payloads;
    expect(decoded.map((p) => Buffer.from(p.metadata.encoding!, 'base64').toString()).every((e) => e === 'json/plain')).toBe(true);
  });

  it('failures are sealed too: a smoke against a dead engine stores "Encoded failure"; the workflow and the CLI read the real error', async () => {
    const dead = await freePort();
    const r = rollflow('smoke', config, '--set', `engines.env.url=http://127.0.0.1:${dead}`);
    expect(r.status, r.stderr).toBe(1);
    // The smoke workflow's report quotes the activity's error: the worker's workflow code opened the sealed failure.
    const line = r.stdout.split('\n').find((l) => l.includes(`FAIL  env       http://127.0.0.1:${dead}`));
    expect(line, r.stdout).toBeDefined();
    const workflowId = /smoke workflow (\S+) started/.exec(r.stdout)![1]!;

    const events = ((await raw.workflow.getHandle(workflowId).fetchHistory()).events ?? []) as temporal.api.history.v1.IHistoryEvent[];
    const failed = events.flatMap((e) => (e.activityTaskFailedEventAttributes?.failure ? [e.activityTaskFailedEventAttributes.failure] : []));
    expect(failed).toHaveLength(1);
    const chain: temporal.api.failure.v1.IFailure[] = [];
    for (let f: temporal.api.failure.v1.IFailure | null | undefined = failed[0]; f; f = f.cause) chain.push(f);
    expect(chain.map((f) => [f.message, f.stackTrace ?? '', encoding(f.encodedAttributes as Payload)])).toEqual(chain.map(() => ['Encoded failure', '', ENCRYPTED_ENCODING]));
    const [opened] = await new AesGcmCodec(key).decode([chain[0]!.encodedAttributes as Payload]);
    const { message } = defaultPayloadConverter.fromPayload<{ message: string }>(opened!);
    expect(message.length).toBeGreaterThan(0);
    expect(line).toContain(message);
  });

  it('in every workflow of the run, as Temporal stores its whole history, only search attributes and patch ids are in the clear and no prompt or env text appears', async () => {
    // The raw listing (the client's list() would open each memo, which is sealed).
    const ids: string[] = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await raw.workflowService.listWorkflowExecutions({ namespace: 'default', ...(nextPageToken ? { nextPageToken } : {}) });
      ids.push(...(page.executions ?? []).map((e) => e.execution!.workflowId!));
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
    expect(ids).toContain('sec');
    expect(ids).toContain('sec/e0-p0/s0'); // and the other trajectories, groups and train steps

    const codec = new AesGcmCodec(key);
    const inClear: string[] = [];
    const texts = new Set<string>();
    const bytes: Buffer[] = [];
    for (const id of ids) {
      const history = await raw.workflow.getHandle(id).fetchHistory();
      bytes.push(Buffer.from(temporal.api.history.v1.History.encode(history).finish()));
      for (const { payload, where } of payloadsIn(history)) {
        if (encoding(payload) !== ENCRYPTED_ENCODING) {
          // Search attributes are indexed by the server; patch markers hold patch ids the SDK writes itself, and a local
          // activity's marker its bookkeeping (type, attempt, times: checked to be nothing more); its result is sealed.
          const sdkOwn = where.endsWith('.markerRecordedEventAttributes.details.patch-data.payloads') || (where.endsWith('.markerRecordedEventAttributes.details.data.payloads') && onlyLocalActivityBookkeeping(payload));
          if (!where.includes('.searchAttributes.') && !sdkOwn) inClear.push(`${id} ${where}`);
          continue;
        }
        const [opened] = await codec.decode([payload]);
        for (const text of textsIn(defaultPayloadConverter.fromPayload(opened!))) texts.add(text);
      }
    }
    expect(inClear).toEqual([]);
    // Prompts and the env's answers to them (the sim engines' responses are empty), as the key opens them.
    expect([...texts].filter((t) => t.startsWith('What is')).length).toBeGreaterThanOrEqual(4);
    const stored = Buffer.concat(bytes).toString('utf8');
    expect([...texts].filter((t) => stored.includes(t))).toEqual([]);
  });

  it('without a client certificate, trusting another CA, or speaking TLS to a plaintext server, the CLI and a worker fail in one line naming the fix; a missing file is a config error naming it', () => {
    const where = /^rollflow: no TLS connection to Temporal at 127\.0\.0\.1:\d+ \(TLS with the CA of temporal\.tls\.ca_file /;
    const requiresCert = /\): ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED; the server requires a client certificate: set temporal\.tls\.cert_file and key_file \(or TEMPORAL_TLS_CERT_PATH, TEMPORAL_TLS_KEY_PATH\)$/;
    const noCertConfig = configWith('no-cert', `{ ca_file: "${certs.ca}" }`);
    // The CLI (grpc-js) and a worker (the SDK's Rust core) alike.
    for (const r of [rollflow('status', 'sec', '--config', noCertConfig), rollflow('worker', noCertConfig)]) {
      expectOneLineFailure(r, where);
      expect(r.stderr.trim()).toMatch(requiresCert);
    }

    const wrongCa = rollflow('status', 'sec', '--config', configWith('wrong-ca', `{ ca_file: "${certs.otherCa}", cert_file: "${certs.clientCert}", key_file: "${certs.clientKey}" }`));
    expectOneLineFailure(wrongCa, where);
    expect(wrongCa.stderr).toContain(`temporal.tls.ca_file (${certs.otherCa}), client certificate temporal.tls.cert_file (${certs.clientCert})): SELF_SIGNED_CERT_IN_CHAIN: self-signed certificate in certificate chain; the server's certificate is not signed by the CA this client trusts`);

    // TLS settings, but the address is the dev server's own plaintext port.
    const plaintext = rollflow('status', 'sec', '--config', config, '--set', `temporal.address=${server.address}`);
    expectOneLineFailure(plaintext, where);
    expect(plaintext.stderr).toContain('ERR_SSL_WRONG_VERSION_NUMBER; the server does not answer TLS: is it a plaintext server? Then drop temporal.tls');

    const missing = rollflow('status', 'sec', '--config', configWith('missing', `{ ca_file: "${certs.dir}/nope.pem" }`));
    expect(missing.status, missing.stderr).toBe(2);
    expect(missing.stderr).toContain(`temporal.tls.ca_file: got "${certs.dir}/nope.pem"; a readable CA certificate file (ENOENT)`);
  });

  it('another payload key than the run\'s: the CLI fails in one line naming both keys; a worker fails that run\'s workflow task with the same words and serves on', async () => {
    const otherKey = randomBytes(32);
    const otherKeyFile = path.join(server.stateDir, 'other.key');
    writeFileSync(otherKeyFile, otherKey.toString('hex'));
    const r = rollflow('status', 'sec', '--config', config, '--set', `temporal.encryption.key_file=${otherKeyFile}`);
    expectOneLineFailure(r, /^rollflow: payload encrypted with key [0-9a-f]{16}, this key is [0-9a-f]{16} \(temporal\.encryption\)/);
    // Which key sealed what the CLI read: the run's (its worker answered the status query), or the CLI's own (its query's argument, opened by the worker).
    const [, sealedWith, holder] = /key ([0-9a-f]{16}), this key is ([0-9a-f]{16})/.exec(r.stderr)!;
    expect([sealedWith, holder].sort()).toEqual([new AesGcmCodec(key).keyId, new AesGcmCodec(otherKey).keyId].sort());

    // A run started with the other key: the worker fails its workflow task with a message naming both keys,
    // sealed with the worker's key (the codec server opens it for the UI), and goes on serving other runs.
    const started = rollflow('run', config, '--set', `temporal.encryption.key_file=${otherKeyFile}`, '--run-id', 'wrongkey');
    expect(started.status, started.stderr).toBe(0);
    const handle = raw.workflow.getHandle('wrongkey');
    const failedTask = await until(async () => {
      const events = ((await handle.fetchHistory()).events ?? []) as temporal.api.history.v1.IHistoryEvent[];
      return events.find((e) => e.workflowTaskFailedEventAttributes)?.workflowTaskFailedEventAttributes ?? undefined;
    }, 'a failed workflow task of run wrongkey');
    await handle.terminate('the test is done with it');
    expect(failedTask.failure?.message).toBe('Encoded failure');
    const [opened] = await new AesGcmCodec(key).decode([failedTask.failure!.encodedAttributes as Payload]);
    expect(defaultPayloadConverter.fromPayload<{ message: string }>(opened!).message).toContain(`payload encrypted with key ${new AesGcmCodec(otherKey).keyId}, this key is ${new AesGcmCodec(key).keyId}`);
    const stillServing = rollflow('status', 'sec', '--config', config);
    expect(stillServing.status, stillServing.stderr).toBe(0);
  });
});

/** Every payload in a protobuf message (a history), with where it sits, e.g. ".events.activityTaskScheduledEventAttributes.input.payloads". */
function payloadsIn(message: unknown, where = ''): { payload: Payload; where: string }[] {
  if (message === null || typeof message !== 'object' || ArrayBuffer.isView(message)) return [];
  const m = message as Record<string, unknown>;
  if (m.metadata && typeof m.metadata === 'object' && 'encoding' in m.metadata) return [{ payload: m as Payload, where }];
  return Object.entries(m).flatMap(([k, v]) => payloadsIn(v, Array.isArray(m) ? where : `${where}.${k}`));
}

/** Whether a plain payload holds only what the SDK records of a local activity (no input, no result). */
function onlyLocalActivityBookkeeping(payload: Payload): boolean {
  const value = defaultPayloadConverter.fromPayload<Record<string, unknown>>(payload);
  const sdk = new Set(['seq', 'attempt', 'activity_id', 'activity_type', 'complete_time', 'backoff', 'original_schedule_time']);
  return Object.keys(value).every((k) => sdk.has(k));
}

/** The prompt-like strings of a payload's value: observations and questions. */
function textsIn(value: unknown): string[] {
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => (typeof v === 'string' && v.length > 0 && ['observation', 'question'].includes(k) ? [v] : textsIn(v)));
}

/** A CLI failure: exit 1, one line on stderr, matching `pattern`. */
function expectOneLineFailure(r: { status: number | null; stderr: string }, pattern: RegExp): void {
  expect(r.status, r.stderr).toBe(1);
  expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
  expect(r.stderr.trim()).toMatch(pattern);
}
