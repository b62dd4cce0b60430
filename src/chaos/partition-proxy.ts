/**
 * The chaos harness's partition: a TCP proxy between the run and one engine
 * (the run calls the engine's `url`, the proxy listens there and forwards to
 * the engine's `listen` address, where the stack's supervisor probes it
 * directly, as a supervisor on the engine's own host would). While
 * partitioned, nothing crosses in either direction: open connections stop
 * being read, so their bytes wait in the socket buffers as a real partition's
 * wait in TCP's retransmissions, and a new connection is accepted but not
 * carried on to the engine. Healing resumes both, with every byte delivered
 * in order, as TCP delivers after a partition shorter than its retransmission
 * timeout (about 15 minutes on Linux). A caller that gives up meanwhile sees
 * the same as on a real network: a call with no answer; and the other side
 * hears of a connection ended or dropped during the partition only at heal.
 */
import net from 'node:net';
import type { LoadedConfig } from '../configs';
import { launchedEngines } from '../stack/engines';

export interface PartitionProxy {
  /** host:port the proxy listens on (the engine's url). */
  readonly from: string;
  /** host:port it forwards to (the engine's listen address). */
  readonly to: string;
  readonly partitioned: boolean;
  partition(): void;
  heal(): void;
  /** Connections accepted, those accepted while partitioned, and bytes carried (either way; none while partitioned). */
  readonly counts: { connections: number; heldAtPartition: number; bytesCarried: number };
  close(): Promise<void>;
}

const hostPort = (u: URL) => ({ host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port) });

/** Starts a proxy listening at `from` (a URL) that forwards to `to`; resolves once it listens. */
export async function startPartitionProxy(from: string, to: string): Promise<PartitionProxy> {
  const listenAt = hostPort(new URL(from));
  const target = hostPort(new URL(to));
  const sockets = new Set<net.Socket>();
  /** Client sockets accepted while partitioned, to be carried on at heal. */
  let held: net.Socket[] = [];
  let partitioned = false;
  /** Writes held back by a partition, done in order at heal. */
  let queued: (() => void)[] = [];
  const counts = { connections: 0, heldAtPartition: 0, bytesCarried: 0 };

  const track = (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };

  const carry = (client: net.Socket) => {
    if (client.destroyed) return;
    const upstream = net.connect(target);
    track(upstream);
    // No pipe(): its own reads would go on during a partition. Each side is written by hand and read only while healed.
    const forward = (src: net.Socket, dst: net.Socket) => {
      src.on('data', (chunk: Buffer) => {
        if (partitioned) {
          // Read before the pause took hold (a chunk the stream had buffered): it waits for the heal like the rest.
          src.pause();
          queued.push(() => dst.write(chunk));
          return;
        }
        counts.bytesCarried += chunk.length;
        if (!dst.write(chunk)) src.pause();
      });
      dst.on('drain', () => {
        if (!partitioned) src.resume();
      });
      // A side that ends or drops during a partition is not heard on the other side until it heals, as on a network.
      const after = (effect: () => void) => (partitioned ? queued.push(effect) : effect());
      src.on('end', () => after(() => dst.end()));
      src.on('error', () => after(() => dst.destroy()));
      src.on('close', () => after(() => dst.destroy()));
    };
    forward(client, upstream);
    forward(upstream, client);
    if (partitioned) {
      client.pause();
      upstream.pause();
    }
  };

  const server = net.createServer({ pauseOnConnect: true }, (client) => {
    track(client);
    counts.connections++;
    client.on('error', () => client.destroy());
    if (partitioned) {
      counts.heldAtPartition++;
      held.push(client);
      return;
    }
    carry(client);
    client.resume();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenAt.port, listenAt.host, () => {
      server.off('error', reject);
      resolve();
    });
  });

  const bound = server.address() as net.AddressInfo; // the real port when `from` asked for any (port 0)
  return {
    from: `${listenAt.host}:${bound.port}`,
    to: `${target.host}:${target.port}`,
    get partitioned() {
      return partitioned;
    },
    counts,
    partition() {
      partitioned = true;
      for (const s of sockets) s.pause();
    },
    heal() {
      partitioned = false;
      const waiting = held;
      held = [];
      const writes = queued;
      queued = [];
      for (const write of writes) write();
      // A held client has no reader yet: resumed only once carry() gave it one, so none of its bytes is dropped.
      for (const s of sockets) if (!waiting.includes(s)) s.resume();
      for (const client of waiting) {
        carry(client);
        client.resume();
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A launched engine the run reaches through a partition proxy. */
export interface ProxiedEngine {
  /** The engine's process name (engine-<role>-<port>). */
  name: string;
  proxy: PartitionProxy;
}

/** The launched engines whose `listen` differs from their `url`: where a partition proxy can stand between them and the run. */
export const proxiableEngines = (loaded: LoadedConfig) => launchedEngines(loaded).filter((e) => e.listen !== e.url);

/** A partition proxy at each proxiable engine's url, forwarding to where it listens. */
export async function startPartitionProxies(loaded: LoadedConfig): Promise<ProxiedEngine[]> {
  const started: ProxiedEngine[] = [];
  try {
    for (const e of proxiableEngines(loaded)) {
      const proxy = await startPartitionProxy(e.url, e.listen).catch((err: Error) => {
        throw new Error(`rollflow chaos: cannot put the partition proxy of ${e.process.name} at ${e.url} (${e.configPath}.url; the server listens at ${e.listen}): ${err.message}`);
      });
      started.push({ name: e.process.name, proxy });
    }
  } catch (err) {
    await Promise.all(started.map((p) => p.proxy.close()));
    throw err;
  }
  return started;
}
