/**
 * Payload encryption (temporal.encryption): every payload is sealed with
 * AES-256-GCM before it leaves the process, so prompts, responses and results
 * are ciphertext at rest in Temporal. A sealed payload names its key by a
 * fingerprint (the first 16 hex digits of the key's SHA-256), so a process
 * with another key says which key it needs instead of failing to authenticate.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FailureConverter, Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ConfigError, type RunConfig } from '../configs';
import { failureConverter } from './failure-converter';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const text = (b: Uint8Array | null | undefined) => (b ? Buffer.from(b).toString('utf8') : '');

/** A key's fingerprint: safe to store beside the data it sealed. */
export const keyId = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 16);

/** Thrown when a payload was sealed with another key than this process has. */
export class EncryptionKeyError extends Error {
  override readonly name = 'EncryptionKeyError';
}

export class AesGcmCodec implements PayloadCodec {
  readonly keyId: string;

  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error(`an AES-256 key is 32 bytes, got ${key.length}`);
    this.keyId = keyId(key);
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.key, iv);
      const sealed = Buffer.concat([iv, cipher.update(temporal.api.common.v1.Payload.encode(p).finish()), cipher.final(), cipher.getAuthTag()]);
      return { metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID]: Buffer.from(this.keyId) }, data: sealed };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      if (text(p.metadata?.encoding) !== ENCRYPTED_ENCODING) return p;
      const sealedWith = text(p.metadata?.[KEY_ID]);
      if (sealedWith !== this.keyId) throw new EncryptionKeyError(`payload encrypted with key ${sealedWith || '(unnamed)'}, this key is ${this.keyId} (temporal.encryption): every process of a run needs the same key`);
      const data = Buffer.from(p.data ?? new Uint8Array());
      const decipher = createDecipheriv('aes-256-gcm', this.key, data.subarray(0, IV_BYTES));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      return temporal.api.common.v1.Payload.decode(plain) as Payload;
    });
  }
}

/** A key as 64 hex digits or base64 of 32 bytes. */
function parseKey(raw: string, from: string): Buffer {
  const s = raw.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(s) ? Buffer.from(s, 'hex') : Buffer.from(s, 'base64');
  if (key.length !== 32) throw new ConfigError(from, [{ path: from, given: `${s.length} characters`, expected: 'a 256-bit key: 64 hex digits or the base64 of 32 bytes (e.g. `openssl rand -hex 32`)' }]);
  return key;
}

/** The codec of temporal.encryption, or none. A key that cannot be read names the key and where it was looked for. */
export function encryptionCodec({ temporal: t }: RunConfig, env: NodeJS.ProcessEnv = process.env): AesGcmCodec | undefined {
  const e = t.encryption;
  if (!e) return undefined;
  if (e.key_env !== undefined) {
    const value = env[e.key_env];
    if (!value) throw new ConfigError('temporal.encryption.key_env', [{ path: 'temporal.encryption.key_env', given: e.key_env, expected: `an environment variable that holds the key; ${e.key_env} is not set` }]);
    return new AesGcmCodec(parseKey(value, `temporal.encryption.key_env (${e.key_env})`));
  }
  let raw: string;
  try {
    raw = readFileSync(e.key_file!, 'utf8');
  } catch (err) {
    throw new ConfigError('temporal.encryption.key_file', [{ path: 'temporal.encryption.key_file', given: e.key_file, expected: `a readable key file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` }]);
  }
  return new AesGcmCodec(parseKey(raw, 'temporal.encryption.key_file'));
}

/** A client's data converter for a config: with encryption, its codec, and failures whose messages are sealed too (failure-converter.ts). */
export function dataConverterOf(config: RunConfig): { payloadCodecs: PayloadCodec[]; failureConverter: FailureConverter } | undefined {
  const codec = encryptionCodec(config);
  return codec ? { payloadCodecs: [codec], failureConverter } : undefined;
}

/** A worker's: the same, with the failure converter by path, for the workflow bundle to import. */
export function workerDataConverterOf(config: RunConfig): { payloadCodecs: PayloadCodec[]; failureConverterPath: string } | undefined {
  const codec = encryptionCodec(config);
  return codec ? { payloadCodecs: [codec], failureConverterPath: require.resolve('./failure-converter') } : undefined;
}
