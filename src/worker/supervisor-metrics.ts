/**
 * The supervisor's account of the local stack (its status file, src/stack/supervisor.ts) on the worker's
 * /metrics, read at each scrape: the supervisor serves no endpoint of its own, and the worker is the process
 * Prometheus already scrapes. Absent when no supervisor runs (a stack under systemd or Kubernetes).
 */
import { Gauge } from 'prom-client';
import type { LoadedConfig } from '../configs';
import { registry } from '../monitoring/run-metrics';
import { readSupervisorStatus } from '../stack/supervisor';

export function registerSupervisorMetrics(loaded: LoadedConfig): void {
  const parts = () => Object.entries(readSupervisorStatus(loaded)?.parts ?? {});
  const gauge = (name: string, help: string, value: (p: ReturnType<typeof parts>[number][1]) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['part'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const [part, p] of parts()) this.set({ part }, value(p));
      },
    });
  if (registry.getSingleMetric('rollflow_supervisor_restarts')) return; // once per process (tests build several workers)
  gauge('rollflow_supervisor_restarts', 'Restarts of the part by the supervisor since the supervisor started (after an exit or a kill for a hang).', (p) => p.restarts);
  gauge('rollflow_supervisor_hang_kills', 'Kills of the part by the supervisor because its probe kept failing (hung, stalled).', (p) => p.hangKills);
  gauge('rollflow_supervisor_part_running', '1 while the supervisor reports the part running, else 0 (starting, unhealthy, backoff, crash-loop).', (p) => (p.state === 'running' ? 1 : 0));
}
