/**
 * A TLS front for a plaintext Temporal dev server (whose CLI build serves no
 * TLS): node:tls terminates TLS, or mTLS when `requireClientCert`, with
 * certificates openssl made, and pipes the bytes to the server
 * (tls-proxy-main.mjs, its own process). What a
 * client meets is a real TLS endpoint speaking gRPC over HTTP/2 (ALPN h2).
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
}

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
  const at = (f: string) => path.join(dir, f);
  return { dir, ca: at('ca.pem'), serverCert: at('server.pem'), serverKey: at('server.key'), clientCert: at('client.pem'), clientKey: at('client.key'), otherCa: at('other-ca.pem') };
}

export interface TlsProxy {
  address: string;
  /** Handshakes completed, and of those, with a client certificate the CA signed. */
  readonly handshakes: number;
  readonly authorizedClients: number;
  close(): Promise<void>;
}

/** The front in a child process (tls-proxy-main.mjs), so a test blocked in spawnSync does not stall it. */
export async function startTlsProxy(certs: Certs, upstream: { port: number }, requireClientCert: boolean): Promise<TlsProxy> {
  const log = path.join(certs.dir, `proxy-${Date.now()}.log`);
  writeFileSync(log, '');
  const child = spawn(process.execPath, [path.join(__dirname, 'tls-proxy-main.mjs'), JSON.stringify({ key: certs.serverKey, cert: certs.serverCert, ca: certs.ca, requireClientCert, upstreamPort: upstream.port, log })], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  const port = Number(/^listening (\d+)$/.exec(line)?.[1]);
  const lines = () => readFileSync(log, 'utf8').split('\n').filter(Boolean);
  return {
    address: `127.0.0.1:${port}`,
    get handshakes() {
      return lines().filter((l) => l.startsWith('handshake')).length;
    },
    get authorizedClients() {
      return lines().filter((l) => l === 'handshake authorized=true').length;
    },
    async close() {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
