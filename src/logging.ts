/**
 * pino loggers: JSON lines by default (machines read them), pretty on a TTY
 * (people read them). Logs go to stderr so stdout stays for command output.
 * ROLLFLOW_LOG_LEVEL and ROLLFLOW_LOG_FORMAT=json|pretty override.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(name: string): Logger {
  const level = process.env.ROLLFLOW_LOG_LEVEL ?? 'info';
  const format = process.env.ROLLFLOW_LOG_FORMAT ?? (process.stderr.isTTY ? 'pretty' : 'json');
  if (format === 'pretty') {
    return pino({ name, level }, pino.transport({ target: 'pino-pretty', options: { destination: 2, ignore: 'pid,hostname' } }));
  }
  return pino({ name, level }, pino.destination({ dest: 2, sync: true }));
}
