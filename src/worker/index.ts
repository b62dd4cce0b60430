/**
 * A rollflow worker: polls the run's task queue, runs workflows in Temporal's
 * deterministic sandbox and activities in this process. Stops cleanly on
 * SIGINT/SIGTERM (Temporal's runtime handles both), finishing what it can.
 * With temporal.route_by_role it also polls the engine roles' queues
 * (core/roles.ts), or, given roles, only theirs: one SDK worker per queue,
 * sharing this process's connection and activities.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker, type LogEntry, type LogLevel } from '@temporalio/worker';
import { createActivities, createDeps, type ActivityDeps } from '../activities';
import type { LoadedConfig, RunConfig } from '../configs';
import { createLogger, type Logger } from '../logging';
import { HEARTBEAT_EVERY_MS, queueOfRole, WORKER_ROLES, type WorkerRole } from '../core';
import { connectClient } from '../client/connect';
import { explainConnectFailure } from '../client/connect-failure';
import { TemporalUnreachableError } from '../client/errors';
import { connectionSecurity } from '../client/tls';
import { workerDataConverterOf } from '../codec/encryption';
import { freeLoopbackAddress, startMetricsServer } from '../monitoring/metrics-server';
import { startBeating } from './liveness';
import { registerSupervisorMetrics } from './supervisor-metrics';
import { reclaimFromDeadWorkers, workerIdentity } from './reclaim';

let runtimeInstalled = false;

const levels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };

/** An SDK log entry as a pino line; the SDK's `error` field (a failed activity's error) is serialized by the logger with its cause chain. */
export const forwardSdkLog = (log: Logger) => (e: LogEntry) => log[levels[e.level]]({ ...e.meta }, e.message);

/**
 * Routes the Temporal SDK's own logs through pino and, with `sdkMetrics`, serves its runtime metrics on a free
 * loopback port (returned) for the worker's /metrics to pass on. Once per process. The port is free when picked, but
 * another process may take it before the SDK binds (workers of parallel tests share the host): then the SDK fails to
 * start its exporter, so a new port is tried, and after three the worker goes on without the SDK's metrics (a warning).
 */
export async function installRuntime(log: Logger, sdkMetrics: boolean, pickAddress = freeLoopbackAddress): Promise<string | undefined> {
  if (runtimeInstalled) return undefined;
  const logger = new DefaultLogger('INFO', forwardSdkLog(log));
  for (let attempt = 1; sdkMetrics && attempt <= 3; attempt++) {
    const bindAddress = await pickAddress();
    try {
      Runtime.install({ logger, telemetryOptions: { metrics: { prometheus: { bindAddress, countersTotalSuffix: true } } } });
      runtimeInstalled = true;
      return bindAddress;
    } catch (e) {
      // Runtime.install keeps nothing when its exporter fails to bind, so it can be called again.
      log.warn({ bindAddress, attempt, err: e }, 'the Temporal SDK runtime could not serve its metrics there');
    }
  }
  if (sdkMetrics) log.warn('the worker\'s /metrics goes on without the Temporal SDK runtime\'s metrics');
  Runtime.install({ logger });
  runtimeInstalled = true;
  return undefined;
}

export interface WorkerOptions {
  /** Where the workflow code is; the compiled dist/workflows by default. Tests point at src/. */
  workflowsPath?: string;
  identity?: string;
  /** The SDK runtime serves its Prometheus metrics (runWorker sets it; in-process workers of tests and benches do not). */
  sdkMetrics?: boolean;
  /** The queues to poll (`rollflow worker --role`); default every queue the config schedules on (workerRoles). */
  roles?: readonly WorkerRole[];
}

/**
 * The roles a worker serves: those asked for, else every one the config schedules on (main alone when it does not
 * route by role). An engine role the config never schedules on is refused: its worker would wait for nothing.
 */
export function workerRoles({ config }: LoadedConfig, asked?: readonly WorkerRole[]): WorkerRole[] {
  const routed = config.temporal.route_by_role;
  if (!asked || asked.length === 0) return routed ? [...WORKER_ROLES] : ['main'];
  const unscheduled = asked.filter((r) => r !== 'main' && !routed);
  if (unscheduled.length > 0) throw new Error(`--role ${unscheduled.join(',')}: temporal.route_by_role is false, so every call is scheduled on task_queue ${JSON.stringify(config.temporal.task_queue)} (role main); set it to true to route the calls of engine roles to their own queues`);
  return [...new Set(asked)];
}

export async function createWorker(
  loaded: LoadedConfig,
  opts: WorkerOptions = {},
): Promise<{ workers: Worker[]; connection: NativeConnection; deps: ActivityDeps; sdkMetricsAddress: string | undefined }> {
  const { config } = loaded;
  const roles = workerRoles(loaded, opts.roles);
  const log = createLogger('worker');
  const sdkMetricsAddress = await installRuntime(log, opts.sdkMetrics ?? false);
  const deps = createDeps(loaded, log);
  const security = connectionSecurity(config);
  const dataConverter = workerDataConverterOf(config);
  const connection = await NativeConnection.connect({ address: config.temporal.address, ...(security.tls ? { tls: security.tls } : {}), ...(security.apiKey ? { apiKey: security.apiKey } : {}) }).catch(async (e: unknown) => {
    throw new TemporalUnreachableError(await explainConnectFailure(config.temporal.address, security, e));
  });
  const workers: Worker[] = [];
  try {
    const activities = createActivities(deps);
    const common = {
      connection,
      namespace: config.temporal.namespace,
      ...(dataConverter ? { dataConverter } : {}),
      activities,
      maxConcurrentActivityTaskExecutions: config.temporal.worker.max_concurrent_activities,
      identity: opts.identity ?? workerIdentity(),
      // Beats reach the server as they are made, not at 80% of the heartbeat timeout (the
      // SDK's default throttle), so the timeout has room for late ones (heartbeat-timing.ts).
      maxHeartbeatThrottleInterval: HEARTBEAT_EVERY_MS,
      defaultHeartbeatThrottleInterval: HEARTBEAT_EVERY_MS,
    };
    for (const role of roles) {
      const taskQueue = queueOfRole(config.temporal.task_queue, role);
      // Only the run's queue has workflow tasks (and so local activities); an engine role's queue has activities only.
      const workflows = role === 'main' ? { workflowsPath: opts.workflowsPath ?? require.resolve('../workflows'), ...workflowTaskOptions(config.temporal.worker) } : {};
      workers.push(await Worker.create({ ...common, taskQueue, ...workflows }));
    }
  } catch (e) {
    await connection.close(); // an open connection would keep this process alive
    throw e;
  }
  log.info({ address: config.temporal.address, taskQueues: roles.map((r) => queueOfRole(config.temporal.task_queue, r)) }, 'worker ready');
  return { workers, connection, deps, sdkMetricsAddress };
}

/** The workflow side of a worker, from temporal.worker; a key left unset keeps the SDK's default. */
export function workflowTaskOptions(w: RunConfig['temporal']['worker']) {
  return {
    maxConcurrentLocalActivityExecutions: w.max_concurrent_local_activities,
    ...(w.max_concurrent_workflow_tasks ? { maxConcurrentWorkflowTaskExecutions: w.max_concurrent_workflow_tasks } : {}),
    ...(w.max_cached_workflows !== undefined ? { maxCachedWorkflows: w.max_cached_workflows } : {}),
    ...(w.non_sticky_poll_ratio !== undefined ? { nonStickyToStickyPollRatio: w.non_sticky_poll_ratio } : {}),
  };
}

/** What a dead worker of this host left behind is retried now (reclaim.ts); a failure here costs only speed, never the worker. */
async function reclaim({ config }: LoadedConfig, identity: string): Promise<void> {
  const log = createLogger('worker');
  try {
    const client = await connectClient(config);
    try {
      const reclaimed = await reclaimFromDeadWorkers(client, config.temporal.task_queue, identity);
      if (reclaimed.activities > 0) log.info(reclaimed, 'retried the calls of a dead worker of this host at once');
    } finally {
      await client.connection.close();
    }
  } catch (e) {
    log.warn({ err: e }, 'could not reclaim the calls of dead workers; they are retried after their heartbeat timeout');
  }
}

/** The SDK workers of one process as one, for its beat: the first one's state, the work in flight of all. */
function together(workers: Worker[]): Pick<Worker, 'getStatus'> {
  return {
    getStatus: () => {
      const all = workers.map((w) => w.getStatus());
      return { ...all[0]!, numInFlightActivities: all.reduce((n, s) => n + s.numInFlightActivities, 0), numInFlightWorkflowActivations: all.reduce((n, s) => n + s.numInFlightWorkflowActivations, 0) };
    },
  };
}

/** Runs every SDK worker until all have stopped; one that fails stops the others, and its error is thrown. */
async function runAll(workers: Worker[]): Promise<void> {
  const stopOthers = (failed: Worker) => workers.forEach((w) => w !== failed && w.getState() === 'RUNNING' && w.shutdown());
  const results = await Promise.allSettled(workers.map((w) => w.run().catch((e: unknown) => {
    stopOthers(w);
    throw e;
  })));
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
}

export async function runWorker(loaded: LoadedConfig, opts: WorkerOptions = {}): Promise<void> {
  const metricsAddress = loaded.config.temporal.worker.metrics_address;
  const created: { workers?: Worker[] } = {}; // beats start before the SDK workers exist
  const stopBeating = startBeating(loaded, () => created.workers && together(created.workers), createLogger('worker'));
  const { workers, connection, deps, sdkMetricsAddress } = await createWorker(loaded, { ...opts, sdkMetrics: metricsAddress !== 'off' }).catch((e: unknown) => {
    stopBeating();
    throw e;
  });
  created.workers = workers;
  registerSupervisorMetrics(loaded);
  const metrics = metricsAddress === 'off' ? undefined : await startMetricsServer(metricsAddress, sdkMetricsAddress, createLogger('worker'));
  // The health prober lives as long as the worker: it brings inference servers marked down back.
  deps.prober.start();
  const reclaiming = reclaim(loaded, workers[0]!.options.identity); // one identity for all of them
  try {
    await runAll(workers);
    await reclaiming;
  } finally {
    stopBeating();
    metrics?.close();
    await deps.trackers.closeAll(); // wandb finishes its runs
    await deps.prober.stop();
    await connection.close();
  }
}
