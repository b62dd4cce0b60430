// Operator commands and `dev up` against a real dev server, as a user meets
// them when something is wrong: a run id that does not exist, a run no
// worker polls, a run that ended, an unreachable server, and a `dev up` with
// options the new server would refuse. Each is one line on stderr and a
// non-zero exit; no stack trace; nothing working is stopped.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskQueuePollers } from '../../src/client/run-handle';
import { AesGcmCodec } from '../../src/codec/encryption';
import { batchDir, METRIC } from '../../src/core';
import type { RunStatus } from '../../src/workflows/run';
import { KIND } from '../../src/workflows/search-attributes';
import { freePort, readJsonl, readPid, ROOT, TestDevServer, until } from './helpers/dev-server';

let server: TestDevServer;
let client: Client;
let opsConfig: string;
let stackConfig: string;
let inferencePort: number;
/** How long `rollflow status` took on a run no worker polls; printed for the record, not asserted. */
let noWorkerStatusMs = 0;

// A hang guard well below the 30 s Temporal holds a query nobody answers.
const rollflow = (...args: string[]) => server.rollflow(args, 25_000);
const rollflowSlow = (...args: string[]) => server.rollflow(args, 300_000);

function expectOneLineError(r: { status: number | null; stderr: string }, text: string | RegExp): void {
  expect(r.status, r.stderr).toBe(1);
  expect(r.stderr.trimEnd().split('\n'), r.stderr).toHaveLength(1);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  expect(r.stderr).toMatch(text);
}

beforeAll(async () => {
  expect(existsSync(path.join(ROOT, 'dist/cli/index.js')), 'run `make build` first').toBe(true);
  server = await TestDevServer.create();
  server.start();
  client = new Client({ connection: await Connection.connect({ address: server.address }) });
  opsConfig = path.join(server.stateDir, 'ops.yaml');
  writeFileSync(opsConfig, `temporal: { address: "${server.address}", task_queue: op-test }\n`);
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  inferencePort = inference;
  stackConfig = path.join(server.stateDir, 'stack.yaml');
  writeFileSync(
    stackConfig,
    [
      `run_dir: ${server.stateDir}/run`,
      `temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: op-stack }`,
      'engines:',
      `  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: { max_batch: 8 } }]`,
      `  trainer: { url: "http://127.0.0.1:${trainer}" }`,
      `  env: { url: "http://127.0.0.1:${env}" }`,
      '',
    ].join('\n'),
  );
  // A run nobody serves: op-test has no worker.
  await client.workflow.start('run', { taskQueue: 'op-test', workflowId: 'unserved', args: [{}] });
});

afterAll(async () => {
  rollflowSlow('dev', 'down', stackConfig);
  await client?.connection.close();
  server?.stop();
  if (noWorkerStatusMs) process.stdout.write(`rollflow status on a run no worker polls answered in ${noWorkerStatusMs} ms\n`);
});

describe('operator commands on runs that cannot answer', () => {
  it.each([['status'], ['suspend'], ['resume'], ['sync-weights', '/tmp/weights']])('%s on a run that does not exist: one line, exit 1', (command, ...rest) => {
    expectOneLineError(rollflow(command, 'no-such-run', ...rest, '--config', opsConfig), /^rollflow: no run "no-such-run" in namespace default$/m);
  });

  it('status on a run no worker polls says so and how to start one, without waiting for the query to time out', () => {
    const started = Date.now();
    const r = rollflow('status', 'unserved', '--config', opsConfig);
    noWorkerStatusMs = Date.now() - started;
    expectOneLineError(r, 'rollflow: no worker is polling task queue "op-test", so run "unserved" cannot answer; start one with `rollflow dev up`');
  });

  it('smoke with no worker says the same', () => {
    expectOneLineError(rollflow('smoke', opsConfig), /^rollflow: no worker is polling task queue "op-test" at 127\.0\.0\.1:\d+; start one with `rollflow dev up`/m);
  });

  it('sync-weights needs a worker too; a suspend is kept for when one comes', () => {
    expectOneLineError(rollflow('sync-weights', 'unserved', '/tmp/weights', '--config', opsConfig), /no worker is polling task queue "op-test"/);
    const r = rollflow('suspend', 'unserved', '--config', opsConfig);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('run unserved: suspend sent; no worker polls task queue "op-test" yet, so it takes effect when one does');
  });

  it('signals to a run that ended name its state', async () => {
    await client.workflow.getHandle('unserved').terminate('test');
    expectOneLineError(rollflow('resume', 'unserved', '--config', opsConfig), /^rollflow: run "unserved" is terminated; only a running run can be resumed$/m);
    expectOneLineError(rollflow('sync-weights', 'unserved', '/tmp/weights', '--config', opsConfig), /no worker is polling|is terminated/);
  });

  it('status on a run whose only worker stopped (Temporal still lists it for minutes) gives up within the query deadline', async () => {
    // A worker of our own on op-test runs a smoke workflow to completion, then stops.
    const worker = spawn(path.join(ROOT, 'bin/rollflow'), ['worker', opsConfig], { env: { ...server.env, ROLLFLOW_LOG_FORMAT: 'json' }, stdio: 'ignore' });
    try {
      await until(async () => ((await taskQueuePollers(client, 'default', 'op-test')).length > 0 ? true : undefined));
      await client.workflow.execute('smoke', { taskQueue: 'op-test', workflowId: 'served-once', args: [{ engines: [] }] });
    } finally {
      worker.kill('SIGTERM');
      await once(worker, 'exit');
    }
    expect(await taskQueuePollers(client, 'default', 'op-test')).not.toEqual([]); // the stopped worker, still listed
    expectOneLineError(rollflowSlow('status', 'served-once', '--config', opsConfig), /^rollflow: run "served-once" did not answer within 10 s: no live worker on task queue "op-test" \(a stopped one stays listed for a few minutes\); start one with `rollflow dev up`/m);
  });

  it('an unreachable Temporal server is one line too', async () => {
    const nowhere = path.join(server.stateDir, 'nowhere.yaml');
    writeFileSync(nowhere, `temporal: { address: "127.0.0.1:${await freePort()}" }\n`);
    expectOneLineError(rollflow('status', 'x', '--config', nowhere), /^rollflow: no Temporal server at 127\.0\.0\.1:\d+ \(.*\); start one with `rollflow dev up`$/m);
  });
});

describe('dev up with options a server would refuse', () => {
  it('stops nothing: the running server keeps serving and every bad key is named', () => {
    const up = rollflowSlow('dev', 'up', stackConfig);
    expect(up.status, up.stderr).toBe(0);
    const pidFile = enginePidFile('engine-inference-');
    const pid = readPid(pidFile);

    const bad = rollflowSlow('dev', 'up', stackConfig, '--set', 'engines.inference[0].options.max_batch=0', '--set', 'custom_envs.lake.env_type=frozen_lak');
    expect(bad.status, bad.stderr).toBe(2);
    expect(bad.stderr).toContain('engines.inference[0].options.max_batch: got 0; Input should be greater than or equal to 1');
    expect(bad.stderr).toContain('custom_envs.lake.env_type: got "frozen_lak"; a registered env: ');
    expect(bad.stderr).not.toMatch(/^\s+at /m);

    expect(readPid(pidFile)).toBe(pid);
    const status = rollflowSlow('dev', 'status', stackConfig);
    expect(status.status, status.stdout).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`engine-inference-\\d+: running pid=${pid} `));
  });
});

describe('a run\'s life from the command line: cancel, watch, wait, list', () => {
  it('a run cancelled while suspended ends cleanly: a checkpoint, nothing trained twice or after, no server left paused; watch draws its bar on a terminal and plain lines otherwise; wait and list report it', async () => {
    const started = rollflowSlow('run', stackConfig, '--run-id', 'life', '--set', 'max_steps=1000', '--set', 'custom_envs={arith: {env_type: arithmetic, max_steps: 1, max_tokens_per_step: 8}}');
    expect(started.status, started.stderr).toBe(0);
    const life = client.workflow.getHandle('life');
    await until(async () => ((await life.query<RunStatus>('status')).step >= 2 ? true : undefined), 'two steps trained');
    // On a terminal (a pseudo-terminal from util-linux's `script`), watch redraws one line in place: the bar.
    const onTerminal = spawn('script', ['-qefc', [path.join(ROOT, 'bin/rollflow'), 'watch', 'life', '--config', stackConfig].map(shellQuoted).join(' '), '/dev/null'], { env: server.env });
    let screen = '';
    onTerminal.stdout.on('data', (d: Buffer) => (screen += d.toString()));
    const watched = once(onTerminal, 'exit');
    try {
      await until(async () => (/\r\x1b\[2K\[[#-]{24}\] \d+\/1000 {2}ETA \S+ {2}reward \d\.\d{3} {2}staleness \d+ {2}in flight \d+/.test(screen) ? true : undefined), 'watch drew its bar');

      expect(rollflow('suspend', 'life', '--config', stackConfig).status).toBe(0);
      const cancel = rollflow('cancel', 'life', '--config', stackConfig);
      expect(cancel.status, cancel.stderr).toBe(0);
      expect(cancel.stdout).toContain('run life: cancel sent: the run ends after the step in progress, with a checkpoint');
      expect((await watched)[0], screen).toBe(0);
    } finally {
      onTerminal.kill(); // a no-op once it has exited; else no watch outlives a failed test
    }
    expect(screen).toMatch(/\[#*-*\] \d+\/1000 .*\r?\ncancelled after step \d+: a checkpoint was saved/); // the bar's last frame, then the end on a line of its own

    const watch = rollflowSlow('watch', 'life', '--config', stackConfig);
    expect(watch.status, watch.stderr).toBe(0);
    expect(watch.stdout).toMatch(/^step \d+\/1000 {2}version \d+ /m); // plain lines: stdout is not a terminal
    expect(watch.stdout).toMatch(/^cancelled after step \d+: a checkpoint was saved/m);

    const wait = rollflowSlow('wait', 'life', '--json', '--config', stackConfig);
    expect(wait.status, wait.stderr).toBe(0);
    const final = JSON.parse(wait.stdout) as RunStatus;
    expect(final.cancelled?.atStep).toBe(final.step);
    expect(final.step).toBeGreaterThanOrEqual(2);
    expect(final.step).toBeLessThan(1000);
    expect(existsSync(path.join(server.stateDir, 'run', 'life', 'checkpoints', `step-${String(final.step).padStart(6, '0')}`))).toBe(true);
    // Nothing trained after the cancel, and no sample twice.
    const metrics = readJsonl<{ step: number }>(path.join(server.stateDir, 'run', 'life', 'metrics.jsonl'));
    expect(metrics.map((r) => r.step)).toEqual(Array.from({ length: final.step }, (_, i) => i));
    const batches = path.join(server.stateDir, 'run', 'samples', batchDir('life'));
    const uids = readdirSync(batches).flatMap((f) => readJsonl<{ uid: string }>(path.join(batches, f)).map((r) => r.uid));
    expect(uids).toHaveLength(final.totals.consumedSamples);
    expect(new Set(uids).size).toBe(uids.length);
    // Suspended, the run had paused the inference server; cancelled, it resumed it.
    expect(((await (await fetch(`http://127.0.0.1:${inferencePort}/state`)).json()) as { paused: boolean }).paused).toBe(false);

    const list = rollflow('list', '--config', stackConfig);
    expect(list.status, list.stderr).toBe(0);
    expect(list.stdout.split('\n')[0]).toBe('RUN\tSTATUS\tSTEP\tVERSION\tREWARD\tVAL_REWARD\tSTARTED');
    const reward = (metrics.at(-1) as Record<string, number>)[METRIC.rewardMean]!.toFixed(3);
    expect(list.stdout).toMatch(new RegExp(`^life\tcompleted\t${final.step}\t${final.version}\t${reward}\t-\t`, 'm'));
  });

  it('list --limit takes an integer ≥ 1: anything else is a usage error (exit 2) naming the option and the value', () => {
    for (const bad of ['abc', '0', '2.5']) {
      const r = rollflow('list', '--limit', bad, '--config', opsConfig);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr.trim()).toBe(`error: option '--limit <n>' argument '${bad}' is invalid. expected an integer ≥ 1.`);
    }
    const one = rollflow('list', '--limit', '1', '--config', stackConfig);
    expect(one.status, one.stderr).toBe(0);
    expect(one.stdout.trim().split('\n')).toHaveLength(2); // the header and one run
  });

  it('wait on a run that did not complete exits 1 with its cause in one line', async () => {
    const doomed = await client.workflow.start('run', { taskQueue: 'op-test', workflowId: 'doomed', args: [{}] });
    await doomed.terminate('stopped by the test');
    expectOneLineError(rollflow('wait', 'doomed', '--config', opsConfig), /^rollflow: run doomed terminated: .*stopped by the test/m);
  });
});

// Last in the file: once a listed run's memo is sealed, listing without the key fails, as it should.
describe('runs whose data temporal.encryption seals, read by a config without the key', () => {
  it('wait and list say the data is encrypted and what to set, in one line; wait does not call it a run failure; with the key they work', async () => {
    const key = randomBytes(32);
    const keyFile = path.join(server.stateDir, 'sealed.key');
    writeFileSync(keyFile, key.toString('hex'));
    const sealedConfig = path.join(server.stateDir, 'sealed.yaml');
    writeFileSync(sealedConfig, `temporal: { address: "${server.address}", task_queue: op-sealed, encryption: { key_file: "${keyFile}" } }\n`);
    const sealing = new Client({ connection: client.connection, dataConverter: { payloadCodecs: [new AesGcmCodec(key)] } });
    const noKey = /^rollflow: the run's data is encrypted \(temporal\.encryption\) and this config has no key: set temporal\.encryption/m;

    // A workflow completed with a sealed result, by a worker with the key.
    const worker = spawn(path.join(ROOT, 'bin/rollflow'), ['worker', sealedConfig], { env: { ...server.env, ROLLFLOW_LOG_FORMAT: 'json' }, stdio: 'ignore' });
    try {
      await until(async () => ((await taskQueuePollers(client, 'default', 'op-sealed')).length > 0 ? true : undefined));
      await sealing.workflow.execute('smoke', { taskQueue: 'op-sealed', workflowId: 'sealed-smoke', args: [{ engines: [] }] });
    } finally {
      worker.kill('SIGTERM');
      await once(worker, 'exit');
    }
    const waited = rollflow('wait', 'sealed-smoke', '--config', opsConfig);
    expectOneLineError(waited, noKey);
    expect(waited.stderr).not.toMatch(/failed|terminated/);
    const withKey = rollflow('wait', 'sealed-smoke', '--json', '--config', sealedConfig);
    expect(withKey.status, withKey.stderr).toBe(0);
    expect(JSON.parse(withKey.stdout)).toEqual(await sealing.workflow.getHandle('sealed-smoke').result());

    // A listed run whose memo is sealed (no worker needed: the memo is given at its start).
    await sealing.workflow.start('run', { taskQueue: 'op-sealed-idle', workflowId: 'sealed-run', args: [{}], memo: { [METRIC.rewardMean]: 0.5 }, typedSearchAttributes: [{ key: KIND, value: 'run' }] });
    expectOneLineError(rollflow('list', '--config', opsConfig), noKey);
    const listed = rollflow('list', '--config', sealedConfig);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^sealed-run\trunning\t-\t-\t0\.500\t-\t/m);
  });
});

/** One argument for `sh -c`. */
const shellQuoted = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

function enginePidFile(prefix: string): string {
  const dir = path.join(server.stateDir, 'pids');
  const name = readdirSync(dir).find((f) => f.startsWith(prefix));
  if (!name) throw new Error(`no pid file ${prefix}* in ${dir}`);
  return path.join(dir, name);
}
