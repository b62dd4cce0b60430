/**
 * A loop beside a workflow's main line: each turn waits until `ready`, then
 * runs to its end; stop() lets no turn start after it. The run's dispatcher
 * and its engine control are two.
 */
import { condition } from '@temporalio/workflow';

export class Loop {
  private stopped = false;
  private readonly finished: Promise<void>;

  constructor(ready: () => boolean, turn: () => Promise<void>) {
    this.finished = (async () => {
      for (;;) {
        await condition(() => this.stopped || ready());
        if (this.stopped) return;
        await turn();
      }
    })();
  }

  /** Resolves when the turn under way, if any, has ended. */
  stop(): Promise<void> {
    this.stopped = true;
    return this.finished;
  }
}
