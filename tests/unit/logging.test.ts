// A failed activity's log line says what failed and why: the error's message
// and its cause chain, not only its name (the SDK logs the error under
// `error`, which pino would write as the error's enumerable fields alone).
import { Writable } from 'node:stream';
import { DefaultLogger } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { EngineUnavailableError } from '../../src/gpu-bridge/errors';
import { createLogger } from '../../src/logging';
import { forwardSdkLog } from '../../src/worker';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger('test', stream), lines };
}

const refused = () => {
  const socket = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8301'), { code: 'ECONNREFUSED' });
  return new EngineUnavailableError('inference at http://127.0.0.1:8301 is unreachable', true, { cause: new TypeError('fetch failed', { cause: socket }) });
};

describe('error log lines', () => {
  it('carry the message, the cause chain and the error\'s own fields', () => {
    const { log, lines } = capture();
    log.error({ err: refused() }, 'call failed');
    const err = lines[0]!.err as Record<string, unknown>;
    expect(err).toMatchObject({
      type: 'EngineUnavailableError',
      message: 'inference at http://127.0.0.1:8301 is unreachable',
      causes: ['TypeError: fetch failed', 'Error: connect ECONNREFUSED 127.0.0.1:8301'],
    });
    expect(err.stack).toMatch(/caused by: Error: connect ECONNREFUSED/);
  });

  it('do so for the Temporal SDK\'s "Activity failed" line, logged as the SDK logs it', () => {
    const { log, lines } = capture();
    // The call @temporalio/worker's activity.js makes when an activity throws.
    new DefaultLogger('INFO', forwardSdkLog(log)).warn('Activity failed', { error: refused(), durationMs: 12, activityType: 'generate' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, msg: 'Activity failed', durationMs: 12, activityType: 'generate' });
    expect(lines[0]!.error).toMatchObject({ type: 'EngineUnavailableError', message: 'inference at http://127.0.0.1:8301 is unreachable', causes: ['TypeError: fetch failed', 'Error: connect ECONNREFUSED 127.0.0.1:8301'] });
  });

  it('leave values that are not errors alone', () => {
    const { log, lines } = capture();
    log.info({ error: 'just text' }, 'm');
    expect(lines[0]!.error).toBe('just text');
  });
});
