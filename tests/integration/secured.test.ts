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
import type { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmCodec, ENCRYPTED_ENCODING, EncryptionKeyError } from '../../src/codec/encryption';
import { freePort, TestDevServer } from './helpers/dev-server';
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

  it('without a client certificate, or trusting another CA, the CLI fails in one line; a missing file is a config error naming it', () => {
    const noCert = rollflow('status', 'sec', '--config', configWith('no-cert', `{ ca_file: "${certs.ca}" }`));
    expect(noCert.status, noCert.stderr).toBe(1);
    expect(noCert.stderr.trim().split('\n')).toHaveLength(1);
    expect(noCert.stderr).toMatch(/^rollflow: no Temporal server at 127\.0\.0\.1:\d+ \(over TLS with the CA of temporal\.tls\.ca_file .*check the TLS settings/);

    const wrongCa = rollflow('status', 'sec', '--config', configWith('wrong-ca', `{ ca_file: "${certs.otherCa}", cert_file: "${certs.clientCert}", key_file: "${certs.clientKey}" }`));
    expect(wrongCa.status, wrongCa.stderr).toBe(1);
    expect(wrongCa.stderr).toContain(`over TLS with the CA of temporal.tls.ca_file (${certs.otherCa})`);

    const missing = rollflow('status', 'sec', '--config', configWith('missing', `{ ca_file: "${certs.dir}/nope.pem" }`));
    expect(missing.status, missing.stderr).toBe(2);
    expect(missing.stderr).toContain(`temporal.tls.ca_file: got "${certs.dir}/nope.pem"; a readable CA certificate file (ENOENT)`);
  });
});
