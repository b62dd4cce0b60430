/**
 * A real S3-compatible store for a test file: versitygw (object-store/versitygw.sh, built by `make setup`) on a
 * free port over a fresh directory, with the bucket `rollflow`. `env` holds the standard AWS variables that point
 * the SDKs at it (the shared credentials and config files the script writes), for this process and its children.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, ROOT } from './dev-server';

const SCRIPT = path.join(ROOT, 'object-store', 'versitygw.sh');

export class TestObjectStore {
  private constructor(
    readonly dir: string,
    readonly address: string,
    readonly env: { AWS_SHARED_CREDENTIALS_FILE: string; AWS_CONFIG_FILE: string },
  ) {}

  static async start(): Promise<TestObjectStore> {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-s3-'));
    const address = `127.0.0.1:${await freePort()}`;
    const settings = { ...process.env, ROLLFLOW_S3_DIR: dir, ROLLFLOW_S3_ADDRESS: address };
    execFileSync(SCRIPT, ['start'], { env: settings, stdio: ['ignore', 'ignore', 'pipe'] });
    const env = { AWS_SHARED_CREDENTIALS_FILE: path.join(dir, 'aws', 'credentials'), AWS_CONFIG_FILE: path.join(dir, 'aws', 'config') };
    return new TestObjectStore(dir, address, env);
  }

  /** The file versitygw's posix backend keeps the object `key` of `bucket` in. */
  objectFile(key: string, bucket = 'rollflow'): string {
    return path.join(this.dir, 'data', bucket, key);
  }

  stop(): void {
    execFileSync(SCRIPT, ['stop'], { env: { ...process.env, ROLLFLOW_S3_DIR: this.dir, ROLLFLOW_S3_ADDRESS: this.address }, stdio: 'ignore' });
  }
}
