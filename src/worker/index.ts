/**
 * A rollflow worker: polls the run's task queue, runs workflows in Temporal's
 * deterministic sandbox and activities in this process. Stops cleanly on
 * SIGINT/SIGTERM (Temporal's runtime handles both), finishing what it can.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker, type LogEntry, type LogLevel } from '@temporalio/worker';
import { createActivities, createDeps, type ActivityDeps } from '../activities';
import type { LoadedConfig } from '../configs';
import { createLogger, type Logger } from '../logging';

let runtimeInstalled = false;

const levels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };

/** An SDK log entry as a pino line; the SDK's `error` field (a failed activity's error) is serialized by the logger with its cause chain. */
export const forwardSdkLog = (log: Logger) => (e: LogEntry) => log[levels[e.level]]({ ...e.meta }, e.message);

/** Routes the Temporal SDK's own logs through pino. Once per process. */
function installRuntimeLogger(log: Logger): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({ logger: new DefaultLogger('INFO', forwardSdkLog(log)) });
}

export interface WorkerOptions {
  /** Where the workflow code is; the compiled dist/workflows by default. Tests point at src/. */
  workflowsPath?: string;
  identity?: string;
}

export async function createWorker(loaded: LoadedConfig, opts: WorkerOptions = {}): Promise<{ worker: Worker; connection: NativeConnection; deps: ActivityDeps }> {
  const { config } = loaded;
  const log = createLogger('worker');
  installRuntimeLogger(log);
  const deps = createDeps(loaded, log);
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  let worker: Worker;
  try {
    worker = await Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.task_queue,
      workflowsPath: opts.workflowsPath ?? require.resolve('../workflows'),
      activities: createActivities(deps),
      maxConcurrentActivityTaskExecutions: config.temporal.worker.max_concurrent_activities,
      maxConcurrentLocalActivityExecutions: config.temporal.worker.max_concurrent_local_activities,
      ...(config.temporal.worker.max_concurrent_workflow_tasks ? { maxConcurrentWorkflowTaskExecutions: config.temporal.worker.max_concurrent_workflow_tasks } : {}),
      ...(config.temporal.worker.max_cached_workflows !== undefined ? { maxCachedWorkflows: config.temporal.worker.max_cached_workflows } : {}),
      ...(opts.identity ? { identity: opts.identity } : {}),
    });
  } catch (e) {
    await connection.close(); // an open connection would keep this process alive
    throw e;
  }
  log.info({ address: config.temporal.address, taskQueue: config.temporal.task_queue }, 'worker ready');
  return { worker, connection, deps };
}

export async function runWorker(loaded: LoadedConfig, opts: WorkerOptions = {}): Promise<void> {
  const { worker, connection, deps } = await createWorker(loaded, opts);
  // The health prober lives as long as the worker: it brings inference servers marked down back.
  deps.prober.start();
  try {
    await worker.run();
  } finally {
    await deps.prober.stop();
    await connection.close();
  }
}
