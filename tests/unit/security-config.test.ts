import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { explainConnectFailure } from '../../src/client/connect-failure';
import { connectionSecurity, tlsRequestedBy } from '../../src/client/tls';
import { checkConfig } from '../../src/client/preflight';
import { AesGcmCodec, encryptionCodec, ENCRYPTED_ENCODING, EncryptionKeyError } from '../../src/codec/encryption';
import { ConfigError, parseConfig } from '../../src/configs';

const dir = mkdtempSync(path.join(tmpdir(), 'security-'));
const file = (name: string, text: string) => {
  const f = path.join(dir, name);
  writeFileSync(f, text);
  return f;
};
const configOf = (temporal: Record<string, unknown>) => parseConfig({ temporal }, 'test').config;

describe('connection security (temporal.tls, api_key_file, TEMPORAL_TLS_*)', () => {
  it('plaintext unless something asks for TLS', () => {
    expect(connectionSecurity(configOf({}), {})).toEqual({ describe: 'plaintext' });
  });

  it('reads the files the config names; the environment wins over the config', () => {
    const ca = file('ca.pem', 'CA'), other = file('other.pem', 'OTHER'), crt = file('c.pem', 'CRT'), key = file('c.key', 'KEY');
    const s = connectionSecurity(configOf({ tls: { ca_file: ca, cert_file: crt, key_file: key, server_name: 'temporal.internal' } }), { TEMPORAL_TLS_CA_PATH: other });
    expect(Buffer.from(s.tls!.serverRootCACertificate!).toString()).toBe('OTHER');
    expect(Buffer.from(s.tls!.clientCertPair!.crt).toString()).toBe('CRT');
    expect(s.tls!.serverNameOverride).toBe('temporal.internal');
    expect(s.describe).toBe(`TLS with the CA of TEMPORAL_TLS_CA_PATH (${other}), client certificate temporal.tls.cert_file (${crt})`);
  });

  it('an API key (from a file, or TEMPORAL_API_KEY) turns TLS on with the system CAs', () => {
    const s = connectionSecurity(configOf({ api_key_file: file('key.txt', 'secret-from-file\n') }), {});
    expect(s).toMatchObject({ apiKey: 'secret-from-file', tls: {}, describe: `TLS with the system CAs, an API key from temporal.api_key_file (${dir}/key.txt)` });
    expect(connectionSecurity(configOf({ api_key_file: file('k2.txt', 'x') }), { TEMPORAL_API_KEY: 'from-env' })).toMatchObject({ apiKey: 'from-env', apiKeyFrom: 'TEMPORAL_API_KEY' });
  });

  it('TLS asked for by the config or the environment, on the embedded (plaintext) dev server\'s loopback address, is a config error naming temporal.embedded', () => {
    expect(tlsRequestedBy(configOf({}), {})).toBeUndefined();
    expect(tlsRequestedBy(configOf({ tls: {} }), {})).toBe('temporal.tls');
    expect(tlsRequestedBy(configOf({ api_key_file: 'k' }), {})).toBe('temporal.api_key_file');
    expect(tlsRequestedBy(configOf({}), { TEMPORAL_TLS_SERVER_NAME: 'x' })).toBe('TEMPORAL_TLS_SERVER_NAME');
    const loaded = parseConfig({ temporal: { address: '127.0.0.1:7233', tls: { ca_file: 'ca.pem' } } }, 'test');
    expect(() => checkConfig(loaded, { run: false })).toThrow(/temporal\.embedded: got true; false when temporal\.tls asks for TLS: the embedded dev server at 127\.0\.0\.1:7233 serves no TLS/);
  });

  it('a missing file names its key and path; half a client pair is refused', () => {
    expect(() => connectionSecurity(configOf({ tls: { ca_file: `${dir}/nope.pem` } }), {})).toThrow(`temporal.tls.ca_file: got "${dir}/nope.pem"; a readable CA certificate file (ENOENT)`);
    expect(() => configOf({ tls: { cert_file: 'a.pem' } })).toThrow(ConfigError);
    expect(() => connectionSecurity(configOf({}), { TEMPORAL_TLS_CERT_PATH: 'c.pem' })).toThrow('TEMPORAL_TLS_CERT_PATH: got "c.pem"; mTLS with a key (temporal.tls.key_file or TEMPORAL_TLS_KEY_PATH) too');
  });
});

describe('why a connection failed (explainConnectFailure)', () => {
  it('a refusal of credentials is said as one, from the client\'s gRPC status or the worker\'s (tonic\'s) message', async () => {
    const refused = Object.assign(new Error('Failed to connect to Temporal server'), { cause: { code: 16, details: 'no API key' } });
    expect(await explainConnectFailure('h:7233', { describe: 'TLS with the system CAs' }, refused)).toBe(
      'Temporal at h:7233 refused the credentials (TLS with the system CAs): UNAUTHENTICATED: no API key; give an API key: temporal.api_key_file or TEMPORAL_API_KEY',
    );
    const denied = new Error("Failed to call GetSystemInfo: code: 'The caller does not have permission to execute the specified operation', message: \"namespace\"");
    expect(await explainConnectFailure('h:7233', { apiKey: 'k', apiKeyFrom: 'TEMPORAL_API_KEY', describe: 'TLS with the system CAs, an API key from TEMPORAL_API_KEY' }, denied)).toBe(
      `Temporal at h:7233 refused the credentials (TLS with the system CAs, an API key from TEMPORAL_API_KEY): ${denied.message}; check the API key (TEMPORAL_API_KEY)`,
    );
  });

  it('any other failure of a plaintext connection is "no Temporal server" with the SDK\'s reason', async () => {
    const other = Object.assign(new Error('Failed to connect before the deadline'), { cause: { code: 14, details: 'unavailable' } });
    expect(await explainConnectFailure('h:7233', { describe: 'plaintext' }, other)).toBe('no Temporal server at h:7233 (Failed to connect before the deadline); start one with `rollflow dev up`');
  });
});

describe('payload encryption (temporal.encryption)', () => {
  const key = Buffer.alloc(32, 7);

  it('seals payloads so their text is gone, and opens them again', async () => {
    const codec = new AesGcmCodec(key);
    const plain = [defaultPayloadConverter.toPayload({ prompt: 'What is 7+5?' })];
    const [sealed] = await codec.encode(plain);
    expect(Buffer.from(sealed!.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(sealed!.data!).toString('latin1')).not.toContain('What is');
    expect(defaultPayloadConverter.fromPayload((await codec.decode([sealed!]))[0]!)).toEqual({ prompt: 'What is 7+5?' });
    // Tampered ciphertext fails authentication.
    const tampered = { ...sealed!, data: Buffer.from(sealed!.data!).map((b, i) => (i === 20 ? b ^ 1 : b)) };
    await expect(codec.decode([tampered])).rejects.toThrow();
  });

  it('another key names both keys; payloads never sealed pass through', async () => {
    const [sealed] = await new AesGcmCodec(key).encode([defaultPayloadConverter.toPayload('x')]);
    const other = new AesGcmCodec(Buffer.alloc(32, 9));
    await expect(other.decode([sealed!])).rejects.toThrow(EncryptionKeyError);
    const open = defaultPayloadConverter.toPayload('open');
    expect(await other.decode([open])).toEqual([open]);
  });

  it('reads the key from a file or a variable, as hex or base64; a bad or missing one is a config error naming it', () => {
    const hex = file('k.hex', key.toString('hex'));
    expect(encryptionCodec(configOf({ encryption: { key_file: hex } }))!.keyId).toBe(new AesGcmCodec(key).keyId);
    expect(encryptionCodec(configOf({ encryption: { key_env: 'K' } }), { K: key.toString('base64') })!.keyId).toBe(new AesGcmCodec(key).keyId);
    expect(() => encryptionCodec(configOf({ encryption: { key_env: 'K' } }), {})).toThrow('temporal.encryption.key_env: got "K"; an environment variable that holds the key; K is not set');
    expect(() => encryptionCodec(configOf({ encryption: { key_file: file('short', 'abcd') } }))).toThrow('a 256-bit key: 64 hex digits or the base64 of 32 bytes');
    expect(() => configOf({ encryption: {} })).toThrow(ConfigError);
  });
});
