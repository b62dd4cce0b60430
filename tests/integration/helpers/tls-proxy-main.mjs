// The TLS front of tls-proxy.ts, in its own process: the tests run the CLI with spawnSync, which would stall a
// proxy living in the test's own event loop. Argument: JSON {key, cert, ca, requireClientCert, upstreamPort, log}.
// Prints "listening <port>"; appends "handshake authorized=<bool>" to `log` per client.
import { appendFileSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createServer } from 'node:tls';

const o = JSON.parse(process.argv[2]);
const server = createServer(
  { key: readFileSync(o.key), cert: readFileSync(o.cert), ca: [readFileSync(o.ca)], requestCert: o.requireClientCert, rejectUnauthorized: o.requireClientCert, ALPNProtocols: ['h2'] },
  (clear) => {
    appendFileSync(o.log, `handshake authorized=${clear.authorized}\n`);
    const plain = connect(o.upstreamPort, '127.0.0.1');
    clear.pipe(plain).pipe(clear);
    const end = () => {
      clear.destroy();
      plain.destroy();
    };
    for (const s of [clear, plain]) {
      s.on('error', end);
      s.on('close', end);
    }
  },
);
server.on('tlsClientError', () => appendFileSync(o.log, 'refused\n'));
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
