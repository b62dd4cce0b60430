/**
 * K simulated inference servers, stepped like the python-engines scheduler
 * (roles/inference/stepped.py SteppedEngine + sim.py): each server decodes one
 * token for every running sequence per step, a step over b sequences takes
 * c0 + c1·b seconds (memory-bound decode), at most max_batch sequences run
 * and the rest wait in FIFO order for a free slot at a step boundary. A
 * sequence of natural length L needs L steps. Each request goes to a server
 * chosen by the bridge's own router (src/gpu-bridge/pool.ts: fewest
 * outstanding requests, rotating among ties), so the DES routes as the real
 * run does.
 */
import { InferencePool, type Lease } from '../../gpu-bridge/pool';
import type { EventQueue } from './event-queue';

export interface ServerModel {
  servers: number;
  max_batch: number;
  /** Seconds per decode step. */
  c0_s: number;
  /** Extra seconds per decode step per running sequence. */
  c1_s: number;
}

interface Request {
  left: number;
  lease: Lease;
  onDone: () => void;
}

interface Sequence {
  remaining: number;
  request: Request;
}

interface Server {
  waiting: Sequence[];
  running: Sequence[];
  /** A step is in progress, or one is about to start at this instant. */
  active: boolean;
  busy_s: number;
  steps: number;
}

export interface ServerStats {
  /** Seconds each server spent decoding. */
  busy_s: number[];
  steps: number[];
  tokens: number;
}

export class SimulatedInferenceServers {
  private readonly servers: Server[];
  private readonly pool: InferencePool;
  private tokens = 0;

  constructor(
    private readonly events: EventQueue,
    private readonly model: ServerModel,
  ) {
    if (model.servers < 1 || model.max_batch < 1) throw new RangeError('need at least one server and max_batch >= 1');
    this.servers = Array.from({ length: model.servers }, () => ({ waiting: [], running: [], active: false, busy_s: 0, steps: 0 }));
    this.pool = new InferencePool(this.servers.map((_, i) => String(i)));
  }

  /**
   * One generate call of n = lengths.length sequences (n > 1: num_return_sequences
   * on one server). `onDone` runs when its last sequence ends. Returns the server index.
   */
  submit(lengths: readonly number[], onDone: () => void): number {
    if (lengths.length === 0) throw new RangeError('a request needs at least one sequence');
    const lease = this.pool.acquire();
    const index = Number(lease.url);
    const server = this.servers[index]!;
    const request: Request = { left: lengths.length, lease, onDone };
    for (const length of lengths) {
      if (!(length >= 1)) throw new RangeError(`sequence length must be >= 1, got ${length}`);
      server.waiting.push({ remaining: Math.round(length), request });
    }
    if (!server.active) {
      server.active = true;
      // Start at this instant but after everything already due now, so a burst submitted together shares the first step.
      this.events.after(0, () => this.step(server));
    }
    return index;
  }

  stats(): ServerStats {
    return { busy_s: this.servers.map((s) => s.busy_s), steps: this.servers.map((s) => s.steps), tokens: this.tokens };
  }

  private step(server: Server): void {
    while (server.waiting.length > 0 && server.running.length < this.model.max_batch) server.running.push(server.waiting.shift()!);
    if (server.running.length === 0) {
      server.active = false;
      return;
    }
    const batch = server.running.length;
    const duration = this.model.c0_s + this.model.c1_s * batch;
    server.busy_s += duration;
    server.steps++;
    this.events.after(duration, () => {
      this.tokens += batch;
      const finished: Request[] = [];
      server.running = server.running.filter((seq) => {
        if (--seq.remaining > 0) return true;
        if (--seq.request.left === 0) finished.push(seq.request);
        return false;
      });
      // Callers may submit follow-up work from onDone; it joins the next step, as with a client that answers instantly.
      for (const request of finished) {
        request.lease.release();
        request.onDone();
      }
      this.step(server);
    });
  }
}
