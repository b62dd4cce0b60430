/**
 * The inference servers take one control sequence at a time: a step's weight
 * sync, an operator's sync and a suspend's pause or resume each run whole,
 * never interleaved (a pause landing inside a sync would leave the servers
 * paused by one and resumed by the other).
 */
import { condition } from '@temporalio/workflow';

export class EngineLock {
  private busy = false;

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await condition(() => !this.busy);
    this.busy = true;
    try {
      return await fn();
    } finally {
      this.busy = false;
    }
  }
}
