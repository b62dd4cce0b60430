/** bench/results/chaos.md: the schedule, every kill, the invariants of both runs and the figures. */
import type { ChaosResult, CheckedRun } from './result';

const s = (x: number | undefined, digits = 1) => (x === undefined ? 'n/a' : x.toFixed(digits));

function runSection(title: string, run: CheckedRun): string[] {
  const a = run.accounting;
  return [
    `### ${title}: ${run.runId} — ${run.ok ? 'all invariants hold' : 'INVARIANTS VIOLATED'}`,
    '',
    `Outcome ${run.records.outcome}${run.timedOut ? ' (timed out, terminated)' : ''}; makespan ${s(run.makespanS)} s (last step's wall_s); ${run.records.metrics.length} metrics records, ${run.records.batches.length} batch files.`,
    '',
    '| invariant | holds | detail |',
    '| --- | --- | --- |',
    ...run.checks.map((c) => `| ${c.name} | ${c.ok ? 'yes' : '**no**'} | ${c.detail.replace(/\|/g, '\\|')} |`),
    '',
    `Groups: ${a.dispatched} dispatched, ${a.executions} executions: ${a.consumed} consumed, ${a.filtered} filtered, ${a.failed} failed, ${a.staleOrBuffered} stale or left buffered, ${a.endedWithRun} in flight at the end, ${a.vanished.length} vanished.`,
    '',
  ];
}

export function chaosMarkdown(r: ChaosResult, header: { command: string; date: string; machine: string; config: string }): string {
  const { schedule: o } = r;
  const byKind = new Map<string, number[]>();
  for (const k of r.recoveries) if (k.recoveryS !== undefined) byKind.set(k.kind, [...(byKind.get(k.kind) ?? []), k.recoveryS]);
  return [
    '# Chaos: processes killed with SIGKILL mid-run',
    '',
    `\`${header.command}\` — ${header.date}, ${header.machine}; config ${header.config}.`,
    '',
    `Schedule: a kill about every ${o.everyS} s (±25 %, seed ${o.seed}, counted from the end of the first step), ${o.order === 'rotate' ? 'rotating over' : 'drawn at random from'} ${o.kinds.join(', ')}; each killed process restarted by the \`rollflow dev up\` logic right away.`,
    `Result: **${r.ok ? 'every invariant held' : 'invariants violated'}**; effective time ${s(r.effectiveTime, 3)} (fault-free makespan / makespan under faults); normal step interval ${s(r.normalStepS, 2)} s (median of the fault-free run, its first step left out).`,
    '',
    '## Kills',
    '',
    'Recovery: from the kill until three steps in a row ran at most 1.5× the normal step interval again (its figure ends where the first of them started; src/chaos/recovery.ts).',
    '',
    '| # | at s | kind | process (pid) | restart s | recovery s | note |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...r.recoveries.map((k) => `| ${k.index} | ${s(k.atS)} | ${k.kind} | ${k.process ? `${k.process} (${k.pid})` : '-'} | ${s(k.restartS)} | ${s(k.recoveryS)} | ${k.skipped ?? k.restartError ?? (k.recoveryS === undefined ? 'not back to the normal rate before the run ended' : '')} |`),
    '',
    '| kind | kills | recovered | mean recovery s | max recovery s |',
    '| --- | --- | --- | --- | --- |',
    ...o.kinds.map((kind) => {
      const times = byKind.get(kind) ?? [];
      const kills = r.recoveries.filter((k) => k.kind === kind && !k.skipped).length;
      return `| ${kind} | ${kills} | ${times.length} | ${times.length ? s(times.reduce((a, b) => a + b, 0) / times.length) : 'n/a'} | ${times.length ? s(Math.max(...times)) : 'n/a'} |`;
    }),
    '',
    '## Invariants',
    '',
    ...(r.faultFree ? runSection('Fault-free', r.faultFree) : []),
    ...runSection('Under faults', r.underFaults),
  ].join('\n');
}
