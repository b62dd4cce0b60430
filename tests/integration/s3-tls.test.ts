// The bucket store over TLS: versitygw serving HTTPS with a certificate of a
// CA the test made (openssl), the clients told only by the settings the
// project's script prints (`versitygw.sh env`): the AWS config file's
// endpoint_url and ca_bundle (boto3), and NODE_EXTRA_CA_CERTS (Node's TLS).
// Each side runs in a process of its own, as the worker and the engines do:
// the TypeScript store writes an object that Python's reader verifies, and a
// client that does not trust the CA is refused by the TLS handshake.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/dev-server';
import { TestObjectStore } from './helpers/object-store';
import { makeCerts } from './helpers/tls-proxy';

let store: TestObjectStore;

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  const certs = makeCerts();
  store = await TestObjectStore.start({ cert: certs.serverCert, key: certs.serverKey, ca: certs.ca });
});

afterAll(() => store?.stop());

/** Runs the compiled TypeScript store in a fresh Node process with `env`: put, then get, of one object. */
function nodeStore(env: Record<string, string>, key: string) {
  const script = `
    const { S3SampleStore } = require(${JSON.stringify(path.join(ROOT, 'dist', 'store'))});
    const s = new S3SampleStore({ bucket: 'rollflow', prefix: 'tls/' });
    s.put(${JSON.stringify(key)}, { uid: 'u1', tokens: [1, 2, 3] })
      .then(() => s.get(${JSON.stringify(key)}))
      .then((v) => console.log(JSON.stringify(v)), (e) => { console.error(e.code ?? e.name, e.message); process.exit(1); });`;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_') && k !== 'NODE_EXTRA_CA_CERTS'));
  return spawnSync(process.execPath, ['--no-warnings', '-e', script], { env: { ...clean, ...env }, encoding: 'utf8', timeout: 60_000 });
}

describe('the bucket store over TLS', () => {
  it('the endpoint is https, and the TypeScript store puts and gets through it with the printed settings alone', () => {
    expect(store.env.NODE_EXTRA_CA_CERTS).toBeDefined();
    expect(readFileSync(store.env.AWS_CONFIG_FILE!, 'utf8')).toMatch(/^endpoint_url = https:\/\/127\.0\.0\.1:\d+$/m);
    const r = nodeStore(store.env, 'samples/u1.json');
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ uid: 'u1', tokens: [1, 2, 3] });
  });

  it('a client that does not trust the CA is refused by the handshake', () => {
    const untrusting = Object.fromEntries(Object.entries(store.env).filter(([k]) => k !== 'NODE_EXTRA_CA_CERTS'));
    const r = nodeStore(untrusting, 'samples/u2.json');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/certificate|self[- ]signed|UNABLE_TO_VERIFY|issuer/i);
  });

  it('Python (boto3, the config file\'s ca_bundle) reads and verifies what the TypeScript store wrote', () => {
    const script = 'import sys, json; from rollflow_engines.objects import read_object; print(json.dumps(json.loads(read_object(sys.argv[1]))))';
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_')));
    const r = spawnSync(path.join(ROOT, '.venv', 'bin', 'python'), ['-c', script, 's3://rollflow/tls/samples/u1.json'], {
      env: { ...clean, ...store.env, PYTHONPATH: path.join(ROOT, 'python-engines') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ uid: 'u1', tokens: [1, 2, 3] });
  });
});
