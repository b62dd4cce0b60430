/**
 * The inference servers take one control sequence at a time: a step's weight
 * sync, an operator's sync and a suspend's pause or resume each run whole,
 * never interleaved (a pause landing inside a sync would leave the servers
 * paused by one and resumed by the other).
 */
import { condition, patched } from '@temporalio/workflow';

export class EngineLock {
  private busy = false;

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await condition(() => !this.busy);
    // The SDK checks every waiting condition in one pass, so two waiters wake together when the lock frees:
    // the first takes it, the others wait again. (patched: before, both ran at once; such histories replay as they ran.)
    if (patched('engine-lock-one-at-a-time')) while (this.busy) await condition(() => !this.busy);
    this.busy = true;
    try {
      return await fn();
    } finally {
      this.busy = false;
    }
  }
}
