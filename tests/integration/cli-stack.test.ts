// The user's path, end to end: `rollflow dev up` brings up a real dev server,
// real engine processes and a worker; `smoke` runs a workflow through them;
// a dead engine is named in the report; `dev down` stops everything.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, readPid, ROOT, TestDevServer, until } from './helpers/dev-server';
import type { SupervisorStatus } from '../../src/stack/supervisor';

let server: TestDevServer;
let config: string;

const rollflow = (...args: string[]) => server.rollflow(args, 300_000);

beforeAll(async () => {
  expect(existsSync(path.join(ROOT, 'dist/cli/index.js')), 'run `make build` first').toBe(true);
  server = await TestDevServer.create();
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  config = path.join(server.stateDir, 'stack.yaml');
  writeFileSync(
    config,
    [
      'exp_name: cli-stack-test',
      `run_dir: ${server.stateDir}/run`,
      'temporal:',
      `  address: ${server.address}`,
      `  ui_url: http://127.0.0.1:${server.uiPort}`,
      '  task_queue: cli-stack-test',
      'engines:',
      `  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim }]`,
      `  trainer: { url: "http://127.0.0.1:${trainer}" }`,
      `  env: { url: "http://127.0.0.1:${env}" }`,
      '',
    ].join('\n'),
  );
});

afterAll(() => {
  rollflow('dev', 'down', config);
});

describe('rollflow CLI on the embedded stack', () => {
  it('rejects a bad config with exit 2, naming the key', () => {
    const r = rollflow('validate', config, '--set', 'temporal.adress=x');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('temporal.adress: got "x"; unknown key; did you mean "address"?');
  });

  it('brings the stack up, idempotently', () => {
    const up = rollflow('dev', 'up', config);
    expect(up.status, up.stderr).toBe(0);
    expect(up.stdout).toMatch(/engine-inference-\d+: started/);
    expect(up.stdout).toMatch(/worker-cli-stack-test: started \(pid \d+\) on task queue cli-stack-test/);

    const again = rollflow('dev', 'up', config);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/engine-inference-\d+: already running/);
    expect(again.stdout).toContain('worker-cli-stack-test: already running');

    const status = rollflow('dev', 'status', config);
    expect(status.status, status.stdout).toBe(0);
    expect(status.stdout.trim().split('\n')).toHaveLength(6); // temporal, 3 engines, worker, the supervisor
    expect(status.stdout).toMatch(/supervisor-cli-stack-test: running pid=\d+/);
  });

  it('runs the smoke workflow through every engine', () => {
    const r = rollflow('smoke', config);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`started: http://127\\.0\\.0\\.1:${server.uiPort}/namespaces/default/workflows/smoke-`));
    expect(r.stdout.match(/^ {2}ok {4}/gm)).toHaveLength(3);
  });

  it('names the engine that is down (with the supervisor stopped, so it stays down)', () => {
    const unsupervised = rollflow('dev', 'up', config, '--no-supervise');
    expect(unsupervised.status, unsupervised.stderr).toBe(0);
    expect(unsupervised.stdout).toMatch(/supervisor-cli-stack-test: stopped/);
    process.kill(readPid(readdirPid('engine-env-')), 'SIGKILL');
    const r = rollflow('smoke', config);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/FAIL {2}env {7}http:\/\/127\.0\.0\.1:\d+ EngineUnavailableError: .*ECONNREFUSED/);
    expect(r.stdout.match(/^ {2}ok {4}/gm)).toHaveLength(2);
    expect(rollflow('dev', 'status', config).status).toBe(3);
  });

  it('with the supervisor back, an engine killed is started again with nobody asking, and dev status says so', async () => {
    const up = rollflow('dev', 'up', config);
    expect(up.status, up.stderr).toBe(0);
    expect(up.stdout).toMatch(/engine-env-\d+: started/); // dev up starts what is down
    const pid = readPid(readdirPid('engine-inference-'));
    process.kill(pid, 'SIGKILL');
    const status = await until(async () => {
      const r = rollflow('dev', 'status', config);
      return r.status === 0 && /engine-inference-\d+: running restarts=1 last: exited/.test(r.stdout) ? r.stdout : undefined;
    }, 'the supervisor to restart the inference server');
    expect(readPid(readdirPid('engine-inference-'))).not.toBe(pid);
    expect(status).toMatch(/supervisor-cli-stack-test: running pid=\d+/);
    expect(rollflow('smoke', config).status).toBe(0);
  });

  it('dev up after the config file changed, under a running supervisor: one worker, of the new config, and the supervisor started again with it', async () => {
    const pids = path.join(server.stateDir, 'pids');
    const [workerFile, supervisorFile] = ['worker-cli-stack-test.pid', 'supervisor-cli-stack-test.pid'].map((f) => path.join(pids, f));
    const [workerBefore, supervisorBefore] = [readPid(workerFile!), readPid(supervisorFile!)];
    // The same arguments, another file content (what a bench or a user editing the YAML does).
    writeFileSync(config, readFileSync(config, 'utf8').replace('  task_queue: cli-stack-test\n', '  task_queue: cli-stack-test\n  worker: { max_concurrent_activities: 123 }\n'));
    const up = rollflow('dev', 'up', config);
    expect(up.status, up.stderr).toBe(0);
    expect(up.stdout).toMatch(/worker-cli-stack-test: restarted \(code rebuilt or config changed\) \(pid \d+\)/);
    const [worker, supervisor] = [readPid(workerFile!), readPid(supervisorFile!)];
    expect(worker).not.toBe(workerBefore);
    // The old supervisor, left watching with the old config, restarted the worker beside dev up's own.
    expect(supervisor).not.toBe(supervisorBefore);
    const seen = await until(async () => {
      const s = JSON.parse(readFileSync(path.join(pids, 'supervisor-cli-stack-test.json'), 'utf8')) as SupervisorStatus;
      return s.pid === supervisor && s.parts['worker-cli-stack-test']?.state === 'running' ? s : undefined;
    }, 'the new supervisor to find the worker running');
    expect(seen.parts['worker-cli-stack-test']).toMatchObject({ pid: worker, restarts: 0, hangKills: 0 });
    expect(workerProcessesOf(config)).toEqual([worker]);
  });

  it('stops everything', () => {
    const down = rollflow('dev', 'down', config);
    expect(down.status, down.stderr).toBe(0);
    expect(down.stdout).toContain('worker: stopped');
    const status = rollflow('dev', 'status', config);
    expect(status.status).toBe(3);
    expect(status.stdout).toContain('temporal: stopped');
  });
});

function readdirPid(prefix: string): string {
  const dir = path.join(server.stateDir, 'pids');
  const name = readdirSync(dir).find((f) => f.startsWith(prefix));
  if (!name) throw new Error(`no pid file ${prefix}* in ${dir}`);
  return path.join(dir, name);
}

/** Live `rollflow worker` processes of `configFile`, from /proc. */
function workerProcessesOf(configFile: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const args = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
        return args.some((a) => a.endsWith('cli/index.js')) && args.includes('worker') && args.includes(configFile);
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}
