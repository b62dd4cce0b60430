/**
 * Why a connection to Temporal failed, in one line. The SDK says little: grpc-js
 * reports a refused client certificate or a certificate for another name as
 * "Failed to connect before the deadline", and a refused API key as "Failed to
 * connect to Temporal server" with the server's answer in its cause. So a TLS
 * failure is looked at once more with Node's own TLS (an HTTP/2 session with
 * the same CA, client certificate and server name), whose error names the
 * problem, and a refusal of credentials is said as one.
 */
import { connect } from 'node:http2';
import type { TLSConfig } from '@temporalio/client';
import type { ConnectionSecurity } from './tls';
import { TLS_ENV } from './tls';

/** gRPC's codes for refused credentials: UNAUTHENTICATED and PERMISSION_DENIED. */
const CREDENTIALS_REFUSED: Record<number, string> = { 16: 'UNAUTHENTICATED', 7: 'PERMISSION_DENIED' };
/** How tonic (the worker's gRPC) describes the same two codes. */
const TONIC_REFUSALS = ['The request does not have valid authentication credentials', 'The caller does not have permission'];

const CLIENT_PAIR = `temporal.tls.cert_file and key_file (or ${TLS_ENV.cert}, ${TLS_ENV.key})`;

const REFUSED_CLIENT_CERT = /CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_UNKNOWN|UNSUPPORTED_CERTIFICATE|HANDSHAKE_FAILURE/;
const REQUIRES_CLIENT_CERT = `the server requires a client certificate: set ${CLIENT_PAIR}`;

/** What to do about a TLS error, by Node's or OpenSSL's error code. */
const HINTS: [RegExp, string][] = [
  [/ALTNAME/, `the server's certificate is for another name: set temporal.tls.server_name (or ${TLS_ENV.serverName}) to a name it carries`],
  [/SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|CERT_UNTRUSTED|CERT_SIGNATURE_FAILURE/, `the server's certificate is not signed by the CA this client trusts (temporal.tls.ca_file or ${TLS_ENV.ca}; default: the system's CAs)`],
  [REFUSED_CLIENT_CERT, `the server refused the client certificate (${CLIENT_PAIR}): is it signed by a CA the server trusts?`],
  [/CERT_HAS_EXPIRED|CERT_NOT_YET_VALID/, 'the server\'s certificate is outside its validity dates'],
  [/WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG|ECONNRESET|HTTP2_ERROR/, `the server does not answer TLS: is it a plaintext server? Then drop temporal.tls, temporal.api_key_file and the ${Object.values(TLS_ENV).join('/')} variables`],
];

function hostAndPort(address: string): { host: string; port: string } {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at).replace(/^\[|\]$/g, ''), port: address.slice(at + 1) };
}

/**
 * The TLS problem at `address` with these settings, or undefined when an HTTP/2 session over TLS
 * comes up (or nothing listens, or nothing answers within `timeoutMs`: not a TLS problem to name).
 */
export function tlsProblem(address: string, tls: TLSConfig, timeoutMs = 5_000): Promise<string | undefined> {
  const { host, port } = hostAndPort(address);
  return new Promise((resolve) => {
    const session = connect(`https://${host.includes(':') ? `[${host}]` : host}:${port}`, {
      ...(tls.serverRootCACertificate ? { ca: Buffer.from(tls.serverRootCACertificate) } : {}),
      ...(tls.clientCertPair ? { cert: Buffer.from(tls.clientCertPair.crt), key: Buffer.from(tls.clientCertPair.key) } : {}),
      ...(tls.serverNameOverride ? { servername: tls.serverNameOverride } : {}),
    });
    const done = (problem: string | undefined) => {
      clearTimeout(guard);
      session.destroy();
      resolve(problem);
    };
    const guard = setTimeout(() => done(undefined), timeoutMs);
    // The server's SETTINGS come after the handshake, and after a client certificate was accepted (TLS 1.3 refuses it only then).
    session.on('remoteSettings', () => done(undefined));
    const onError = (e: NodeJS.ErrnoException) => {
      const code = e.code ?? '';
      if (code === 'ECONNREFUSED') return done(undefined);
      // A server that requires a client certificate refuses its absence with CERTIFICATE_REQUIRED (TLS 1.3) or a
      // bare HANDSHAKE_FAILURE (TLS 1.2): without a certificate of ours, either means "give one".
      const hint = !tls.clientCertPair && REFUSED_CLIENT_CERT.test(code) ? REQUIRES_CLIENT_CERT : HINTS.find(([pattern]) => pattern.test(code))?.[1];
      // OpenSSL's own messages are long and internal ("…:SSL routines:…"); its code says the same.
      const what = code.startsWith('ERR_SSL_') ? code : `${code ? `${code}: ` : ''}${e.message.trim()}`;
      done(hint ? `${what}; ${hint}` : what);
    };
    session.on('error', onError);
    // An alert after the handshake (a refused client certificate, TLS 1.3) reaches the socket, not the session.
    session.socket.on('error', onError);
  });
}

/**
 * The refusal in a failed connect, if the server refused the credentials: the client's ServiceError keeps the
 * server's answer (a gRPC status) as its cause; the worker's connection (the SDK's Rust core, tonic) only has a
 * message, which carries tonic's description of the code.
 */
function credentialsRefusal(e: unknown): string | undefined {
  const cause = (e as { cause?: { code?: unknown; details?: unknown } }).cause;
  if (typeof cause?.code === 'number' && CREDENTIALS_REFUSED[cause.code]) return `${CREDENTIALS_REFUSED[cause.code]}: ${String(cause.details ?? '')}`;
  const message = (e as Error).message ?? '';
  return TONIC_REFUSALS.some((description) => message.includes(description)) ? message : undefined;
}

/** One line on why connecting to `address` failed with `security`; `e` is what the SDK threw. */
export async function explainConnectFailure(address: string, security: ConnectionSecurity, e: unknown): Promise<string> {
  const message = (e as Error).message;
  const refusal = credentialsRefusal(e);
  if (refusal) {
    const fix = security.apiKeyFrom ? `check the API key (${security.apiKeyFrom})` : `give an API key: temporal.api_key_file or ${TLS_ENV.apiKey}`;
    return `Temporal at ${address} refused the credentials (${security.describe}): ${refusal}; ${fix}`;
  }
  if (security.tls) {
    const problem = await tlsProblem(address, security.tls);
    if (problem) return `no TLS connection to Temporal at ${address} (${security.describe}): ${problem}`;
    return `no Temporal server at ${address} (over ${security.describe}: ${message}); start one with \`rollflow dev up\`, or check the TLS settings (temporal.tls, TEMPORAL_TLS_*)`;
  }
  return `no Temporal server at ${address} (${message}); start one with \`rollflow dev up\``;
}
