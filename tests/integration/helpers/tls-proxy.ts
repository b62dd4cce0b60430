/**
 * TLS fronts for a plaintext Temporal dev server (whose CLI build serves no
 * TLS), each in its own process, with certificates openssl made:
 * - startTlsProxy: node:tls terminates TLS, or mTLS when `requireClientCert`,
 *   and pipes the bytes to the server (tls-proxy-main.mjs). What a client
 *   meets is a real TLS endpoint speaking gRPC over HTTP/2 (ALPN h2).
 * - startApiKeyFront: node:http2 over TLS answers each gRPC call only with
 *   the right API key, as Temporal Cloud does, and forwards it
 *   (api-key-front-main.mjs).
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';

export interface Certs {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A CA that signed nothing here: trusting it instead fails the handshake. */
  otherCa: string;
  /** A server certificate (and key) for the name NAMED_SERVER only: a client must set that name to accept it at 127.0.0.1. */
  namedCert: string;
  namedKey: string;
}

/** The one name namedCert carries. */
export const NAMED_SERVER = 'temporal.internal';

const openssl = (dir: string, ...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });

/** A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, made with openssl. */
export function makeCerts(): Certs {
  const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-certs-'));
  const ca = (name: string) => openssl(dir, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${name}`);
  ca('ca');
  ca('other-ca');
  const leaf = (name: string, ext: string) => {
    openssl(dir, 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    writeFileSync(path.join(dir, `${name}.ext`), ext);
    openssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`);
  };
  leaf('server', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  leaf('client', 'extendedKeyUsage=clientAuth\n');
  leaf('named', `subjectAltName=DNS:${NAMED_SERVER}\nextendedKeyUsage=serverAuth\n`);
  const at = (f: string) => path.join(dir, f);
  return { dir, ca: at('ca.pem'), serverCert: at('server.pem'), serverKey: at('server.key'), clientCert: at('client.pem'), clientKey: at('client.key'), otherCa: at('other-ca.pem'), namedCert: at('named.pem'), namedKey: at('named.key') };
}

export interface TlsProxy {
  address: string;
  /** Handshakes completed, and of those, with a client certificate the CA signed. */
  readonly handshakes: number;
  readonly authorizedClients: number;
  close(): Promise<void>;
}

/** A front script (`*-main.mjs` here) in a child process, so a test blocked in spawnSync does not stall it; its log's lines. */
async function spawnFront(script: string, args: Record<string, unknown>, dir: string): Promise<{ address: string; lines: () => string[]; close: () => Promise<void> }> {
  const log = path.join(dir, `${path.basename(script, '.mjs')}-${Date.now()}.log`);
  writeFileSync(log, '');
  const child = spawn(process.execPath, [path.join(__dirname, script), JSON.stringify({ ...args, log })], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  const port = Number(/^listening (\d+)$/.exec(line)?.[1]);
  return {
    address: `127.0.0.1:${port}`,
    lines: () => readFileSync(log, 'utf8').split('\n').filter(Boolean),
    async close() {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** The TLS (or mTLS) front, in its own process (tls-proxy-main.mjs). */
export async function startTlsProxy(certs: Certs, upstream: { port: number }, requireClientCert: boolean): Promise<TlsProxy> {
  const front = await spawnFront('tls-proxy-main.mjs', { key: certs.serverKey, cert: certs.serverCert, ca: certs.ca, requireClientCert, upstreamPort: upstream.port }, certs.dir);
  return {
    address: front.address,
    get handshakes() {
      return front.lines().filter((l) => l.startsWith('handshake')).length;
    },
    get authorizedClients() {
      return front.lines().filter((l) => l === 'handshake authorized=true').length;
    },
    close: front.close,
  };
}

export interface ApiKeyFront {
  address: string;
  /** The gRPC calls it answered, in order: whether the API key was right, the method, the caller's user-agent. */
  calls(): { accepted: boolean; method: string; userAgent: string }[];
  close(): Promise<void>;
}

/**
 * An API-key front in its own process (api-key-front-main.mjs): TLS with the certificate for NAMED_SERVER only,
 * each gRPC call refused (UNAUTHENTICATED) unless it carries `authorization: Bearer <apiKey>`.
 */
export async function startApiKeyFront(certs: Certs, upstream: { port: number }, apiKey: string): Promise<ApiKeyFront> {
  const front = await spawnFront('api-key-front-main.mjs', { key: certs.namedKey, cert: certs.namedCert, apiKey, upstreamPort: upstream.port }, certs.dir);
  return {
    address: front.address,
    calls: () =>
      front.lines().map((l) => {
        const [verdict, method, ...agent] = l.split(' ');
        return { accepted: verdict === 'accepted', method: method!, userAgent: agent.join(' ') };
      }),
    close: front.close,
  };
}
