/**
 * Brings servers marked down back into the pool: every `everyMs` it asks each
 * down server for GET /health and, when one answers, brings it to the run's
 * latest weights (a restarted server comes back with its launch weights)
 * before marking it up. One per worker process, started and stopped with
 * the worker.
 */
import { engineHealth } from './engines';
import type { InferencePool } from './pool';
import type { InferenceRouter } from './router';

export class HealthProber {
  private timer: NodeJS.Timeout | undefined;
  private probing: Promise<void> | undefined;
  private running = false;

  constructor(
    private readonly pool: InferencePool,
    private readonly router: InferenceRouter,
    private readonly everyMs = 1_000,
    private readonly onUp: (url: string) => void = () => undefined,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule();
  }

  /** Stops probing; resolves once a probe under way has ended. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await this.probing;
  }

  /** One round over the servers marked down; a server that fails any step stays down until the next round. */
  async probeOnce(): Promise<void> {
    await Promise.all(
      this.pool.downUrls().map(async (url) => {
        try {
          await engineHealth(url, { timeoutMs: 2_000 });
          await this.router.bringUp(url);
        } catch {
          return; // still down (or behind): the next round tries again
        }
        this.pool.markUp(url);
        this.onUp(url);
      }),
    );
  }

  private schedule(): void {
    if (!this.running) return;
    this.timer = setTimeout(() => {
      this.probing = this.probeOnce().finally(() => this.schedule());
    }, this.everyMs);
    this.timer.unref(); // never what keeps a process alive
  }
}
