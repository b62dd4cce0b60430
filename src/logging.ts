/**
 * pino loggers: JSON lines by default (machines read them), pretty on a TTY
 * (people read them). Logs go to stderr so stdout stays for command output.
 * ROLLFLOW_LOG_LEVEL and ROLLFLOW_LOG_FORMAT=json|pretty override.
 */
import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** An error's causes, outermost first, at most `max` (a cause that is not an Error ends the chain). */
export function causesOf(e: Error, max = 10): unknown[] {
  const causes: unknown[] = [];
  for (let c = e.cause; c !== undefined && causes.length < max; c = c instanceof Error ? c.cause : undefined) causes.push(c);
  return causes;
}

/**
 * An error as a log field: its type, message, the cause chain (type: message,
 * outermost first) and the stack. Without it an error logged under `error`
 * (as the Temporal SDK logs a failed activity) shows only its own enumerable
 * fields: often just its name.
 */
export function serializeError(value: unknown): unknown {
  if (!(value instanceof Error)) return value;
  const causes = causesOf(value).map((c) => (c instanceof Error ? `${c.name}: ${c.message}` : String(c)));
  // pino's serializer adds the error's own fields (code, status, …) and a stack with the causes' stacks.
  const { stack, ...fields } = pino.stdSerializers.err(value) as unknown as Record<string, unknown>;
  for (const key of ['raw', 'name', 'type', 'message', 'failure']) delete fields[key]; // the error itself; said below; a Temporal failure's proto
  return { type: value.name, message: value.message, ...(causes.length ? { causes } : {}), ...fields, stack };
}

export function createLogger(name: string, destination?: DestinationStream): Logger {
  const level = process.env.ROLLFLOW_LOG_LEVEL ?? 'info';
  const options = { name, level, serializers: { err: serializeError, error: serializeError } };
  if (destination) return pino(options, destination);
  const format = process.env.ROLLFLOW_LOG_FORMAT ?? (process.stderr.isTTY ? 'pretty' : 'json');
  if (format === 'pretty') {
    return pino(options, pino.transport({ target: 'pino-pretty', options: { destination: 2, ignore: 'pid,hostname' } }));
  }
  return pino(options, pino.destination({ dest: 2, sync: true }));
}
