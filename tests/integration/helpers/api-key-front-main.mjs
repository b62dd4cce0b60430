// The API-key front of api-key-front.ts, in its own process (the tests run the CLI with spawnSync, which would
// stall a front living in the test's own event loop). It is what Temporal Cloud is to a client: a TLS endpoint
// that answers a gRPC call only when it carries `authorization: Bearer <key>`, and otherwise UNAUTHENTICATED.
// Calls with the key are forwarded, stream for stream, to a plaintext Temporal dev server (node:http2 both ways).
// Argument: JSON {key, cert, apiKey, upstreamPort, log}. Prints "listening <port>"; appends one line per call to
// `log`: "<accepted|refused> <grpc method> <user-agent>".
import { appendFileSync, readFileSync } from 'node:fs';
import { connect, constants, createSecureServer } from 'node:http2';

const o = JSON.parse(process.argv[2]);
const upstream = connect(`http://127.0.0.1:${o.upstreamPort}`);
upstream.on('error', (e) => process.stderr.write(`api-key front: upstream ${e.message}\n`));

/** Headers without HTTP/2 pseudo-headers (":status", ":path", …), which each side sets itself. */
const plain = (headers) => Object.fromEntries(Object.entries(headers).filter(([k]) => !k.startsWith(':')));

const server = createSecureServer({ key: readFileSync(o.key), cert: readFileSync(o.cert), ALPNProtocols: ['h2'] });
server.on('stream', (stream, headers) => {
  const accepted = headers.authorization === `Bearer ${o.apiKey}`;
  appendFileSync(o.log, `${accepted ? 'accepted' : 'refused'} ${headers[':path']} ${headers['user-agent'] ?? '-'}\n`);
  stream.on('error', () => undefined); // a client that went away; the upstream call is cancelled below
  if (!accepted) {
    const message = headers.authorization ? 'invalid API key' : 'no API key (authorization header) given';
    stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': message }, { endStream: true });
    return;
  }
  const call = upstream.request({ ...plain(headers), ':method': 'POST', ':path': headers[':path'], ':authority': headers[':authority'] });
  let trailers = {};
  call.on('response', (h) => {
    // A trailers-only answer (an error at once) carries grpc-status in its headers and ends there.
    stream.respond({ ':status': h[':status'], ...plain(h) }, h['grpc-status'] !== undefined ? { endStream: true } : { waitForTrailers: true });
  });
  call.on('trailers', (t) => (trailers = plain(t)));
  call.on('data', (chunk) => stream.write(chunk));
  call.on('end', () => {
    if (!stream.closed && !stream.writableEnded) stream.end();
  });
  stream.on('wantTrailers', () => stream.sendTrailers(trailers));
  stream.on('data', (chunk) => call.write(chunk));
  stream.on('end', () => call.end());
  stream.on('close', () => {
    if (!call.closed) call.close(constants.NGHTTP2_CANCEL);
  });
  call.on('error', () => {
    if (!stream.closed) stream.close(constants.NGHTTP2_INTERNAL_ERROR);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0)); // at once: the worker's open long polls would hold server.close
