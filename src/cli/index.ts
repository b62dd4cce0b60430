/**
 * rollflow's command line. Exit codes: 0 ok, 1 failure (a run that failed,
 * timed out or was terminated, for `run --wait` and `wait`), 2 invalid config
 * or usage, 3 `dev status` found a part down.
 */
import path from 'node:path';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { checkConfig } from '../client/preflight';
import { ConfigError } from '../configs';
import { isObjectRef, WORKER_ROLES, type WorkerRole } from '../core';
import { down, probeWorker, status, up } from '../stack';
import { stackParts } from '../stack/parts';
import { supervise, SUPERVISE_DEFAULTS } from '../stack/supervise';
import { supervisorWanted } from '../stack/supervisor';
import { runCodecServer } from '../codec/run';
import { runWorker } from '../worker';
import { benchCommand } from './bench';
import { chaosCommand } from './chaos';
import { loadFromArgs, withConfigOptions, type ConfigOptions } from './options';
import { listRuns, runStatus, steer, syncRunWeights, waitRun, watchRun } from './operate';
import { startRun, type RunOptions } from '../launch/run';
import { runSmoke } from './smoke';
import { causesOf } from '../logging';
import { runRecords } from '../activities/run-records';
import { recordsDirOf } from '../client/plan';
import { openSampleStore } from '../store';

/** An error's message and its causes' (the SDK's "Failed to start Workflow" says why only in its cause), each once. */
export function withCauses(e: Error): string {
  const parts: string[] = [];
  for (const c of [e, ...causesOf(e, 4)]) if (c instanceof Error && !parts.some((p) => p.includes(c.message))) parts.push(c.message);
  return parts.join(': ');
}

/** --role: a comma-separated list of worker roles. */
export function parseRoles(value: string): WorkerRole[] {
  const roles = value.split(',').map((r) => r.trim()).filter((r) => r !== '');
  const unknown = roles.filter((r) => !(WORKER_ROLES as readonly string[]).includes(r));
  if (roles.length === 0 || unknown.length > 0) throw new InvalidArgumentError(`got ${JSON.stringify(value)}; expected roles among ${WORKER_ROLES.join(', ')}, comma-separated`);
  return roles as WorkerRole[];
}

const out = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

function buildProgram(): Command {
  const program = new Command('rollflow').description('asynchronous RL post-training of LLMs as durable Temporal workflows').exitOverride();

  withConfigOptions(program.command('validate'))
    .description('check a run config; print the derived values, or every problem (exit 2)')
    .option('--json', 'print the validated config and derived values as JSON')
    .action((file: string | undefined, opts: ConfigOptions & { json?: boolean }) => {
      const { loaded } = loadFromArgs(file, opts);
      const { notes } = checkConfig(loaded, { run: true });
      if (opts.json) return out(JSON.stringify({ config: loaded.config, derived: loaded.derived, hash: loaded.hash, notes }));
      const d = loaded.derived;
      out(`${loaded.source}: valid (hash ${loaded.hash.slice(0, 12)})`);
      out(`  samples per step B = ${d.samples_per_step} (${d.groups_per_step} groups × ${d.group_size})`);
      out(`  async ratio α = ${loaded.config.async_generation_ratio}: at most ${d.max_samples_in_system} samples buffered or running, staleness bound ${d.max_staleness}`);
      out(`  temporal ${loaded.config.temporal.address} (${loaded.config.temporal.embedded && d.temporal.loopback ? 'embedded' : 'external'}), run dir ${d.run_dir}`);
      for (const note of notes) out(`  note: ${note}`);
    });

  const dev = program.command('dev').description('the local stack: Temporal dev server, engine servers, one worker');
  withConfigOptions(dev.command('up'))
    .description('start whatever is not running, in the background (logs under .state/logs), and the supervisor that restarts what dies or hangs')
    .option('--no-supervise', 'stop the supervisor instead, and keep it off for rollflow run too: a part that dies stays down (to look at it) until the next plain dev up')
    .action(async (file: string | undefined, opts: ConfigOptions & { supervise: boolean }) => {
      const { loaded, args } = loadFromArgs(file, opts);
      await up(loaded, args, out, { supervise: opts.supervise });
      out(`stack up; Temporal UI: ${loaded.config.temporal.ui_url}`);
    });
  withConfigOptions(dev.command('down'))
    .description('stop the worker, the launched engines and the embedded dev server')
    .action(async (file: string | undefined, opts: ConfigOptions) => down(loadFromArgs(file, opts).loaded, out));
  withConfigOptions(dev.command('status'))
    .description('one line per part; exit 3 if any part is down')
    .action(async (file: string | undefined, opts: ConfigOptions) => {
      if (!(await status(loadFromArgs(file, opts).loaded, out))) process.exitCode = 3;
    });

  withConfigOptions(program.command('worker'))
    .description('run a worker in the foreground until SIGINT/SIGTERM')
    .option('--role <roles>', `the queues to poll, comma-separated among ${WORKER_ROLES.join(', ')} (temporal.route_by_role; default every one)`, parseRoles)
    .action(async (file: string | undefined, opts: ConfigOptions & { role?: WorkerRole[] }) => runWorker(loadFromArgs(file, opts).loaded, opts.role ? { roles: opts.role } : {}));

  withConfigOptions(program.command('supervise'))
    .description('(started by dev up) restart any part of the local stack that dies or hangs, until dev down')
    .action(async (file: string | undefined, opts: ConfigOptions) => {
      const { loaded, args } = loadFromArgs(file, opts);
      await supervise(loaded, stackParts(loaded, args), () => supervisorWanted(loaded) !== undefined, SUPERVISE_DEFAULTS, (l) => out(`${new Date().toISOString()} ${l}`));
    });

  withConfigOptions(program.command('probe').argument('<part>', 'worker'))
    .description('exit 0 when the part is live (for an exec liveness probe): worker: its beat file names a live process and is fresh')
    .option('--max-age-s <s>', 'the oldest beat that counts as live', '30')
    .action((part: string, file: string | undefined, opts: ConfigOptions & { maxAgeS: string }) => {
      if (part !== 'worker') throw new InvalidArgumentError(`probe: part ${JSON.stringify(part)}; expected worker (engines answer GET /health themselves)`);
      const maxAgeS = Number(opts.maxAgeS);
      if (!(maxAgeS > 0)) throw new InvalidArgumentError(`--max-age-s: got ${JSON.stringify(opts.maxAgeS)}; expected a number of seconds > 0`);
      const problem = probeWorker(loadFromArgs(file, opts).loaded, maxAgeS * 1000);
      out(problem ?? 'worker: live');
      if (problem) process.exitCode = 1;
    });

  withConfigOptions(program.command('codec-server'))
    .description('serve the Temporal UI\'s remote codec at temporal.codec_url until SIGINT/SIGTERM: decrypts payloads and adds trajectory transcripts from the sample store')
    .action(async (file: string | undefined, opts: ConfigOptions) => runCodecServer(loadFromArgs(file, opts).loaded));

  withConfigOptions(program.command('smoke'))
    .description('run the smoke workflow: every configured engine answers /health through Temporal')
    .action(async (file: string | undefined, opts: ConfigOptions) => {
      const report = await runSmoke(loadFromArgs(file, opts).loaded, out);
      if (!report.ok) process.exitCode = 1;
    });

  withConfigOptions(program.command('run'))
    .description('start a training run (bringing the embedded stack up if needed); prints the run id and UI link')
    .option('--wait', 'follow progress, a line per step, until the run ends')
    .option('--json', 'wait, then print one JSON summary as the last stdout line')
    .option('--run-id <id>', 'workflow id of the run and name of its directory under run_dir (default: <exp_name>-<timestamp>); an id that already has data is refused')
    .option('--resume-from <checkpoint>', 'start from a checkpoint (its directory, or its s3:// ref with a bucket store): consumed prompts are skipped, the step count continues')
    .action(async (file: string | undefined, opts: ConfigOptions & RunOptions) => {
      const { loaded, args } = loadFromArgs(file, opts);
      await startRun(loaded, args, opts, out, (line) => process.stderr.write(`${line}\n`));
    });

  const configOption = ['--config <file>', 'run config (for the Temporal address); default: built-in defaults'] as const;
  const setOption = ['--set <key.path=value>', 'override one value of that config, e.g. temporal.address=host:7233; repeatable', (v: string, prev: string[] = []) => [...prev, v]] as const;
  const loadedOf = (opts: { config?: string; set?: string[] }) => loadFromArgs(opts.config, { set: opts.set ?? [] }).loaded;
  const configOf = (opts: { config?: string; set?: string[] }) => loadedOf(opts).config;
  for (const [name, description] of [
    ['status', 'print a run\'s status (step, version, buffer, running, consumed, staleness)'],
    ['suspend', 'suspend a run: no new work or train step starts, generations in flight freeze on the inference servers'],
    ['resume', 'resume a suspended run'],
    ['cancel', 'end a run cleanly after the step in progress: no more dispatch, a checkpoint to resume from, groups in flight cancelled; the run completes'],
  ] as const) {
    program
      .command(name)
      .description(description)
      .argument('<run>', 'run id')
      .option(...configOption)
      .option(...setOption)
      .action(async (runId: string, opts: { config?: string; set?: string[] }) => {
        if (name === 'status') await runStatus(loadedOf(opts), runId, out);
        else await steer(configOf(opts), runId, name, out);
      });
  }

  program
    .command('wait')
    .description('wait until a run ends: exit 0 if it completed (also after `rollflow cancel`), 1 with the cause if it failed, timed out or was terminated')
    .argument('<run>', 'run id')
    .option('--json', 'print the final status as one JSON line')
    .option(...configOption)
      .option(...setOption)
    .action(async (runId: string, opts: { config?: string; json?: boolean }) => void (await waitRun(configOf(opts), runId, opts.json === true, out)));

  program
    .command('watch')
    .description('follow a running run until it ends: a live bar on a terminal (step/max, ETA, reward, validation reward, staleness, in flight), a line per step otherwise')
    .argument('<run>', 'run id')
    .option(...configOption)
      .option(...setOption)
    .action(async (runId: string, opts: { config?: string }) => watchRun(configOf(opts), runId, out));

  program
    .command('list')
    .description('list runs, newest first: id, status, step, version, the latest step\'s reward and validation reward, start time')
    .option('--json', 'one JSON array')
    .option('--limit <n>', 'at most n runs (default 50)', (v: string) => {
      const n = Number(v);
      if (!(Number.isInteger(n) && n >= 1)) throw new InvalidArgumentError('expected an integer ≥ 1.');
      return n;
    })
    .option(...configOption)
      .option(...setOption)
    .action(async (opts: { config?: string; json?: boolean; limit?: number }) => listRuns(configOf(opts), opts, out));

  program
    .command('records')
    .description('print a run\'s step records (metrics.jsonl), or with --validation its validation records, as JSON lines, from wherever the run keeps them: its directory, or the bucket of a bucket store')
    .argument('<run>', 'run id')
    .option('--validation', 'validation.jsonl instead')
    .option(...configOption)
    .option(...setOption)
    .action(async (runId: string, opts: { config?: string; set?: string[]; validation?: boolean }) => {
      const loaded = loadedOf(opts);
      const where = recordsDirOf(loaded, runId);
      const file = opts.validation ? 'validation.jsonl' : 'metrics.jsonl';
      const records = await runRecords(where, openSampleStore(loaded.derived.sample_store)).read(file);
      if (records.length === 0) throw new Error(`no ${file} records of run ${JSON.stringify(runId)} at ${where}`);
      for (const r of records) out(JSON.stringify(r));
    });

  program
    .command('sync-weights')
    .description('load external weights (an exported weights directory) on every inference server of a run, between train steps')
    .argument('<run>', 'run id')
    .argument('<path>', 'weights directory, as written by the trainer\'s /export_weights, or its s3://<bucket>/<prefix>/v<N> ref')
    .option(...configOption)
      .option(...setOption)
    .action(async (runId: string, weightsPath: string, opts: { config?: string }) => syncRunWeights(configOf(opts), runId, isObjectRef(weightsPath) ? weightsPath : path.resolve(weightsPath), out));

  program.addCommand(benchCommand(out, (line) => process.stderr.write(`${line}\n`)));
  program.addCommand(chaosCommand(out, (line) => process.stderr.write(`${line}\n`)));

  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.exitCode === 0 ? 0 : 2;
    } else if (e instanceof ConfigError) {
      process.stderr.write(`rollflow: ${e.message}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`rollflow: ${withCauses(e as Error)}\n`);
      process.exitCode = 1;
    }
  }
}

// grpc-js sets TLS's server name to the address's host, and Node warns (DEP0123) when that host is an IP address,
// as 127.0.0.1 is: noise on every TLS command. The AWS SDK warns on every bucket command that its releases after
// January 2027 need Node 22: the project pins both its Node (20) and the SDK's version, so nothing is to be done
// by the user. Other warnings print as Node prints them.
process.removeAllListeners('warning');
process.on('warning', (w: Error & { code?: string }) => {
  if (w.code !== 'DEP0123' && !w.message.startsWith('NodeVersionSupportWarning')) process.stderr.write(`${w.name}: ${w.message}\n`);
});

// A reader that went away (`rollflow smoke | head -1`) is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw e;
});

if (require.main === module) void main(process.argv);
