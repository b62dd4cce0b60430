/** bench/results/chaos.md: the schedule, every fault, the invariants of both runs and the figures. */
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
    ...(run.records.skippedStates?.length ? [`Saved trainer states passed over by recovery (recovery.jsonl): ${run.records.skippedStates.map((x) => `v${x.version}`).join(', ')}.`, ''] : []),
  ];
}

/** Each kind and signal with its faults' recovery times and the time until the supervisor had the part running again. */
function byKindTable(r: ChaosResult): string[] {
  const rows = new Map<string, { hit: number; recovered: number[]; back: number[] }>();
  for (const f of r.recoveries) {
    if (f.skipped) continue;
    const key = `${f.kind} | ${f.signal ?? '-'}`;
    const row = rows.get(key) ?? { hit: 0, recovered: [], back: [] };
    row.hit++;
    if (f.recoveryS !== undefined) row.recovered.push(f.recoveryS);
    if (f.backS !== undefined) row.back.push(f.backS);
    rows.set(key, row);
  }
  const mean = (xs: number[]) => (xs.length ? s(xs.reduce((a, b) => a + b, 0) / xs.length) : 'n/a');
  const max = (xs: number[]) => (xs.length ? s(Math.max(...xs)) : 'n/a');
  return [
    '| kind | signal | faults | back (supervisor) | max back s | recovered | mean recovery s | max recovery s |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...[...rows].map(([key, row]) => `| ${key} | ${row.hit} | ${row.back.length} | ${max(row.back)} | ${row.recovered.length} | ${mean(row.recovered)} | ${max(row.recovered)} |`),
  ];
}

/** What a fault did, in words: the signal (and a stop's pause), the state damaged, the disk filled. */
function what(f: ChaosResult['recoveries'][number]): string {
  if (f.kind === 'partition') return `cut off${f.stopS ? ` ${s(f.stopS, 0)} s` : ''}`;
  if (f.kind === 'disk') return `full${f.stopS ? ` ${s(f.stopS, 0)} s` : ''}${f.filledBytes !== undefined ? ` (${s(f.filledBytes / 2 ** 20)} MiB${f.diskFull ? '' : ', NOT full'})` : ''}`;
  const signal = `${f.signal ?? '-'}${f.stopS ? ` ${s(f.stopS, 0)} s` : ''}`;
  return f.corrupted ? `${signal}, v${f.corrupted.version} damaged (${f.corrupted.file.split('/').pop()})` : signal;
}

/** The report's title: what was injected. */
function title(r: ChaosResult): string {
  const signals = (r.schedule.signals ?? ['kill']).map((x) => (x === 'kill' ? 'SIGKILL' : 'SIGSTOP'));
  const kinds = r.schedule.kinds;
  const parts = [...(kinds.some((k) => k !== 'corrupt' && k !== 'disk' && k !== 'partition') ? [`processes hit with ${signals.join(' and ')}`] : []), ...(kinds.includes('corrupt') ? ['the newest trainer state damaged'] : []), ...(kinds.includes('disk') ? ['the disk filled'] : []), ...(kinds.includes('partition') ? ['an engine cut off'] : [])];
  return `# Chaos: ${parts.join(', ')} mid-run, recovered without an operator`;
}

export function chaosMarkdown(r: ChaosResult, header: { command: string; date: string; machine: string; config: string }): string {
  const { schedule: o } = r;
  const signals = o.signals ?? ['kill'];
  return [
    title(r),
    '',
    `\`${header.command}\` — ${header.date}, ${header.machine}; config ${header.config}.`,
    '',
    `Schedule: a fault about every ${o.everyS} s (±25 %, seed ${o.seed}, counted from the end of the first step), ${o.order === 'rotate' ? 'rotating over' : 'drawn at random from'} ${o.kinds.join(', ')}, signal drawn from ${signals.join(', ')} (a stop lasts 30–120 s, then SIGCONT unless the process was replaced)${o.kinds.includes('corrupt') ? '; corrupt: the trainer is SIGKILLed, then a byte of the largest file of its newest saved state is flipped' : ''}${o.kinds.includes('disk') ? '; disk: the tmpfs over the run directory is filled for 30–120 s, then freed' : ''}${o.kinds.includes('partition') ? '; partition: the proxy between the run and one engine carries nothing for 30–120 s, then heals (src/chaos/partition-proxy.ts)' : ''}. Nothing is restarted by the harness: the stack's supervisor (\`rollflow supervise\`) replaces each dead or hung process.`,
    `Result: **${r.ok ? 'every invariant held' : 'invariants violated'}**; effective time ${s(r.effectiveTime, 3)} (fault-free makespan / makespan under faults); normal step interval ${s(r.normalStepS, 2)} s (median of the fault-free run, its first step left out).`,
    '',
    '## Faults',
    '',
    'Back: from the fault until the supervisor reported the part running again (a new process, or the stopped one resumed), or for a full disk until it was freed, for a partition until it healed. Recovery: from the fault until three steps in a row ran at most 1.5× the normal step interval again (its figure ends where the first of them started; src/chaos/recovery.ts).',
    '',
    '| # | at s | kind | fault | process (pid) | back s | recovery s | note |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...r.recoveries.map((k) => `| ${k.index} | ${s(k.atS)} | ${k.kind} | ${what(k)} | ${k.process ? `${k.process}${k.pid !== undefined ? ` (${k.pid})` : ''}` : '-'} | ${s(k.backS)}${k.back ? ` (${k.back})` : ''} | ${s(k.recoveryS)} | ${k.skipped ?? (k.backS === undefined ? 'not reported running again' : k.recoveryS === undefined ? 'not back to the normal rate before the run ended' : '')} |`),
    '',
    ...byKindTable(r),
    '',
    `Supervisor at the end: ${Object.entries(r.underFaults.supervisor).map(([name, p]) => `${name} ${p.state}, ${p.restarts} restarts, ${p.hangKills} hang kills`).join('; ') || 'no status'}.`,
    '',
    '## Invariants',
    '',
    ...(r.faultFree ? runSection('Fault-free', r.faultFree) : []),
    ...runSection('Under faults', r.underFaults),
  ].join('\n');
}
