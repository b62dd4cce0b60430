#!/usr/bin/env node
// Exactly-once, shown as bits, the long version (docs/exactly-once.md; the short one is
// tests/integration/exactly-once.test.ts): for each seed, examples/exactly-once.yaml runs fault-free,
// then again with a fault every EVERY s ±25 % (20-40 s by default) over the kinds KINDS, each a signal
// of SIGNALS (kill: SIGKILL; stop: SIGSTOP for 30-120 s), recovered by the stack's supervisor alone
// (src/chaos/runner.ts); every weights export v1…vN and every batch file of the two runs are compared.
// Writes OUT (bench/results/exactly-once.md); exit 1 if any seed differs.
//   SEEDS (default 1,2,3)  MAX_STEPS (default the config's)  EVERY (default 30)  SIGNALS (default kill,stop)
//   KINDS (default worker,temporal,inference,trainer,env)  TIMEOUT_S per run (default 3600)
// Needs `make build` (it imports dist/).
/* eslint-disable @typescript-eslint/no-require-imports -- a plain node script over dist/, which tsc emits as CommonJS */
const { mkdirSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const ROOT = path.join(__dirname, '..', '..');
process.env.ROLLFLOW_STATE ??= path.join(ROOT, '.state', 'exactly-once');
const { loadConfig } = require(path.join(ROOT, 'dist/configs'));
const { runUnderFaults } = require(path.join(ROOT, 'dist/chaos/runner'));
const { compareBits, readRunBits } = require(path.join(ROOT, 'dist/chaos/exactly-once'));
const { down } = require(path.join(ROOT, 'dist/stack'));

const env = process.env;
const seeds = (env.SEEDS ?? '1,2,3').split(',').map(Number);
const kinds = (env.KINDS ?? 'worker,temporal,inference,trainer,env').split(',');
const signals = (env.SIGNALS ?? 'kill,stop').split(',');
const everyS = Number(env.EVERY ?? 30);
const timeoutS = Number(env.TIMEOUT_S ?? 3600);
const config = path.join(ROOT, env.CONFIG ?? 'examples/exactly-once.yaml');
const out = path.resolve(env.OUT ?? path.join(ROOT, 'bench/results/exactly-once.md'));
const say = (line) => console.error(line);

async function main() {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
  const rows = [];
  let loaded;
  for (const seed of seeds) {
    const sets = [`seed=${seed}`, ...(env.MAX_STEPS ? [`max_steps=${env.MAX_STEPS}`] : [])];
    loaded = loadConfig(config, sets);
    const args = [config, ...sets.flatMap((s) => ['--set', s])];
    const steps = loaded.config.max_steps;
    const prefix = `exactly-once-${seed}-${stamp}`;
    const clean = await runUnderFaults(loaded, args, `${prefix}-clean`, undefined, { timeoutS, maxFaults: 0 }, say);
    const cleanBits = clean.records.outcome === 'COMPLETED' ? readRunBits(loaded, clean.runId, steps) : undefined;
    const faulted = await runUnderFaults(loaded, args, `${prefix}-faults`, { kinds, signals, everyS, seed, order: 'rotate' }, { timeoutS, maxFaults: Infinity }, say);
    const faultedBits = faulted.records.outcome === 'COMPLETED' ? readRunBits(loaded, faulted.runId, steps) : undefined;
    const cmp = cleanBits && faultedBits ? compareBits(cleanBits, faultedBits) : undefined;
    const makespan = (r) => Math.max(0, ...r.records.metrics.map((m) => m.wall_s));
    rows.push({ seed, steps, clean: clean.records.outcome, faulted: faulted.records.outcome, kills: faulted.faults.filter((k) => !k.skipped), cleanS: makespan(clean), faultedS: makespan(faulted), cmp,
      hashClean: cleanBits?.versionHashes.at(-1), hashFaulted: faultedBits?.versionHashes.at(-1) });
    say(`seed ${seed}: ${JSON.stringify(rows.at(-1).cmp)} v${steps} ${rows.at(-1).hashClean} / ${rows.at(-1).hashFaulted}`);
  }
  if (loaded) await down(loaded, say);
  const ok = rows.every((r) => r.cmp?.weightsEqual && r.cmp?.batchesEqual);
  const kindsOf = (r) => Object.entries(r.kills.reduce((n, k) => ({ ...n, [`${k.kind} ${k.signal}`]: (n[`${k.kind} ${k.signal}`] ?? 0) + 1 }), {})).map(([k, n]) => `${k} ${n}`).join(', ');
  const lines = [
    '# Exactly-once, shown as bits',
    '',
    `\`${['bench/exactly-once/run.cjs', ...['SEEDS', 'MAX_STEPS', 'EVERY', 'KINDS'].filter((k) => env[k]).map((k) => `${k}=${env[k]}`)].join(' ')}\` on ${new Date().toISOString()}, ` +
      `${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(2)} at the end; config ${path.relative(ROOT, config)}; a fault every ${everyS} s ±25 % over ${kinds.join(', ')} (signals ${signals.join(', ')}), each recovered by the stack's supervisor alone.`,
    '',
    '| seed | steps | fault-free | with faults | kills | makespan clean / faulted (s) | exports v1…vN equal | batches equal | sha256 of the last export (clean = faulted) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.seed} | ${r.steps} | ${r.clean} | ${r.faulted} | ${r.kills.length} (${kindsOf(r)}) | ${r.cleanS.toFixed(0)} / ${r.faultedS.toFixed(0)} | ` +
      `${r.cmp ? (r.cmp.weightsEqual ? 'yes' : `no, from v${r.cmp.firstDifferentVersion}`) : 'n/a'} | ${r.cmp ? (r.cmp.batchesEqual ? 'yes' : `no, from step ${r.cmp.firstDifferentStep}`) : 'n/a'} | ` +
      `\`${(r.hashClean ?? 'n/a').slice(0, 16)}\`${r.hashClean === r.hashFaulted ? '' : ` ≠ \`${(r.hashFaulted ?? 'n/a').slice(0, 16)}\``} |`),
    '',
    ok ? 'Every seed: every export and every batch bit-identical to the fault-free run.' : 'NOT bit-identical for at least one seed (see the table).',
  ];
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, `${lines.join('\n')}\n`);
  console.log(lines.join('\n'));
  process.exitCode = ok ? 0 : 1;
}
main().catch((e) => {
  console.error(e);
  process.exit(2);
});
