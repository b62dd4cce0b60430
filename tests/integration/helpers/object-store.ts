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
    private readonly settings: NodeJS.ProcessEnv,
    readonly env: Record<string, string>,
  ) {}

  /** With `tls`, it serves HTTPS with that certificate and key, signed by `ca`. */
  static async start(tls?: { cert: string; key: string; ca: string }): Promise<TestObjectStore> {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-s3-'));
    const address = `127.0.0.1:${await freePort()}`;
    const settings = { ...process.env, ROLLFLOW_S3_DIR: dir, ROLLFLOW_S3_ADDRESS: address, ...(tls ? { ROLLFLOW_S3_CERT: tls.cert, ROLLFLOW_S3_KEY: tls.key, ROLLFLOW_S3_CA: tls.ca } : {}) };
    execFileSync(SCRIPT, ['start'], { env: settings, stdio: ['ignore', 'ignore', 'pipe'] });
    // What `versitygw.sh env` prints, as variables.
    const exports = execFileSync(SCRIPT, ['env'], { env: settings, encoding: 'utf8' });
    const env = Object.fromEntries([...exports.matchAll(/^export (\w+)=(.*)$/gm)].map(([, k, v]) => [k!, v!.replace(/\\(.)/g, '$1')]));
    return new TestObjectStore(dir, address, settings, env);
  }

  /** The file versitygw's posix backend keeps the object `key` of `bucket` in. */
  objectFile(key: string, bucket = 'rollflow'): string {
    return path.join(this.dir, 'data', bucket, key);
  }

  stop(): void {
    execFileSync(SCRIPT, ['stop'], { env: this.settings, stdio: 'ignore' });
  }
}
