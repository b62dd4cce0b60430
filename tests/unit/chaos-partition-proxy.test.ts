// The chaos harness's partition proxy (src/chaos/partition-proxy.ts) between a
// client and a recording upstream: while partitioned nothing reaches the
// upstream (each arrival is recorded with the proxy's state at that moment)
// and the proxy carries nothing, a connection opened meanwhile is carried on
// at heal, and every byte sent across a partition arrives once and in order.
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startPartitionProxy, type PartitionProxy } from '../../src/chaos/partition-proxy';

interface Upstream {
  port: number;
  /** Each chunk or connection the upstream saw, with whether the proxy was partitioned then. */
  arrivals: { what: 'connection' | 'data'; bytes: number; duringPartition: boolean }[];
  received: Buffer[];
  /** Called when a connection to the upstream closes. */
  onClose?: () => void;
  close(): Promise<void>;
}

let proxy: PartitionProxy | undefined;
let upstream: Upstream | undefined;
const clients: net.Socket[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  await proxy?.close();
  await upstream?.close();
  proxy = undefined;
  upstream = undefined;
});

/** An upstream that echoes what it gets, recording each arrival against the proxy's state. */
async function echoUpstream(): Promise<Upstream> {
  const arrivals: Upstream['arrivals'] = [];
  const received: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    arrivals.push({ what: 'connection', bytes: 0, duringPartition: proxy?.partitioned ?? false });
    s.on('data', (chunk) => {
      arrivals.push({ what: 'data', bytes: chunk.length, duringPartition: proxy?.partitioned ?? false });
      received.push(chunk);
      s.write(chunk);
    });
    s.on('error', () => undefined);
    s.on('close', () => up.onClose?.());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const up: Upstream = {
    port: (server.address() as net.AddressInfo).port,
    arrivals,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  return up;
}

async function connect(): Promise<net.Socket> {
  const [, port] = proxy!.from.split(':');
  const socket = net.connect(Number(port), '127.0.0.1');
  clients.push(socket);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return socket;
}

/** Reads from `socket` until `n` bytes came back. */
function readBytes(socket: net.Socket, n: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let got = 0;
  return new Promise((resolve, reject) => {
    const onData = (c: Buffer) => {
      chunks.push(c);
      got += c.length;
      if (got >= n) {
        socket.off('data', onData);
        resolve(Buffer.concat(chunks));
      }
    };
    socket.on('data', onData).once('error', reject);
  });
}

const written = (socket: net.Socket, data: Buffer) => new Promise<void>((resolve, reject) => socket.write(data, (err) => (err ? reject(err) : resolve())));
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function setUp() {
  upstream = await echoUpstream();
  proxy = await startPartitionProxy('http://127.0.0.1:0', `http://127.0.0.1:${upstream.port}`);
}

describe('partition proxy', () => {
  it('carries bytes both ways while healed', async () => {
    await setUp();
    const c = await connect();
    const back = readBytes(c, 5);
    await written(c, Buffer.from('hello'));
    expect((await back).toString()).toBe('hello');
    expect(proxy!.counts.connections).toBe(1);
  });

  it('an open connection: bytes sent during a partition reach the upstream only after it heals, once and in order', async () => {
    await setUp();
    const c = await connect();
    const first = readBytes(c, 3);
    await written(c, Buffer.from('one'));
    await first;
    proxy!.partition();
    const back = readBytes(c, 3);
    await written(c, Buffer.from('two')); // in the kernel's buffers, as a partitioned link's segments wait in retransmission
    await sleep(200); // the partition's length, not a synchronisation: nothing may cross meanwhile, however long
    proxy!.heal();
    expect((await back).toString()).toBe('two');
    expect(upstream!.arrivals.filter((a) => a.duringPartition)).toEqual([]);
    expect(Buffer.concat(upstream!.received).toString()).toBe('onetwo');
  });

  it('a connection opened during a partition is accepted but reaches the upstream only at heal', async () => {
    await setUp();
    proxy!.partition();
    const c = await connect();
    const back = readBytes(c, 4);
    await written(c, Buffer.from('ping'));
    await sleep(200);
    expect(upstream!.arrivals).toEqual([]);
    proxy!.heal();
    expect((await back).toString()).toBe('ping');
    expect(upstream!.arrivals.map((a) => a.what)).toEqual(['connection', 'data']);
    expect(upstream!.arrivals.filter((a) => a.duringPartition)).toEqual([]);
    expect(proxy!.counts.heldAtPartition).toBe(1);
  });

  it('a client that drops its connection during a partition is not heard upstream until the heal', async () => {
    await setUp();
    const c = await connect();
    const first = readBytes(c, 2);
    await written(c, Buffer.from('hi'));
    await first;
    const closedUpstream: boolean[] = [];
    upstream!.onClose = () => closedUpstream.push(proxy!.partitioned);
    proxy!.partition();
    c.destroy();
    await sleep(200);
    expect(closedUpstream).toEqual([]);
    proxy!.heal();
    while (closedUpstream.length === 0) await new Promise((r) => setImmediate(r));
    expect(closedUpstream).toEqual([false]);
  });

  it('a large transfer cut mid-stream arrives whole, echoed back intact', async () => {
    await setUp();
    const c = await connect();
    const data = randomBytes(8 * 2 ** 20);
    const back = readBytes(c, data.length);
    const done = written(c, data);
    // Cut once the upstream has seen some of it, then heal: the rest must follow with nothing lost or repeated.
    while (upstream!.received.length === 0) await new Promise((r) => setImmediate(r));
    proxy!.partition();
    const carriedAtCut = proxy!.counts.bytesCarried;
    await sleep(100);
    // The proxy carried nothing meanwhile (what it forwarded before the cut may still land: it was past the cut).
    expect(proxy!.counts.bytesCarried).toBe(carriedAtCut);
    expect(carriedAtCut).toBeLessThan(2 * data.length);
    proxy!.heal();
    await done;
    const echoed = await back;
    expect(sha(Buffer.concat(upstream!.received))).toBe(sha(data));
    expect(echoed.length).toBe(data.length);
    expect(sha(echoed)).toBe(sha(data));
    expect(proxy!.counts.bytesCarried).toBe(2 * data.length);
  });
});
