// temporal/dev-server.sh and ensure-cli.sh: idempotent start/stop, clear errors.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, TestDevServer } from './helpers/dev-server';

describe('embedded dev server scripts', () => {
  const servers: TestDevServer[] = [];
  afterAll(() => servers.forEach((s) => s.stop()));
  const newServer = async () => {
    const s = await TestDevServer.create();
    servers.push(s);
    return s;
  };

  it('starts once, reports health, stops once', async () => {
    const s = await newServer();
    const first = s.start();
    expect(first.stderr).toMatch(/started \(pid (\d+)\)/);
    const pid = /pid (\d+)/.exec(first.stderr)?.[1];

    const second = s.start();
    expect(second.stderr).toContain(`already running (pid ${pid})`);

    const status = s.run('status');
    expect(status.status).toBe(0);
    expect(status.stdout).toContain(`address=${s.address}`);
    expect(status.stdout).toContain(`ui=http://127.0.0.1:${s.uiPort}`);
    expect(status.stdout).toContain(path.join(s.stateDir, 'temporal/temporal.db'));

    expect(s.stop().stderr).toContain(`stopped (pid ${pid})`);
    expect(s.stop().stderr).toContain('not running');
    expect(s.run('status').status).toBe(3);
  });

  it('replaces a stale pid file', async () => {
    const s = await newServer();
    const dead = spawn('true');
    await new Promise((r) => dead.once('exit', r));
    mkdirSync(path.join(s.stateDir, 'temporal'), { recursive: true });
    writeFileSync(path.join(s.stateDir, 'temporal/server.pid'), `${dead.pid}\n`);
    const r = s.start();
    expect(r.stderr).toContain(`removing stale pid file`);
    expect(r.stderr).toContain('started');
    s.stop();
  });

  it('stop keeps the pid file of a server started while it waited for the old one to exit', async () => {
    // `rollflow dev down` of one config stops the Temporal another config's supervisor watches; that supervisor
    // starts a new one as soon as the old exits. Here the stand-in server writes its successor's pid on SIGTERM, before
    // it exits, so the order is fixed: a stop that then removed the file left the successor running, out of reach.
    const s = await newServer();
    const pidFile = path.join(s.stateDir, 'temporal/server.pid');
    mkdirSync(path.dirname(pidFile), { recursive: true });
    const standIn = spawn('bash', ['-c', 'trap \'echo 424242 > "$PIDFILE"; exit 0\' TERM; while :; do sleep 0.05; done', 'server start-dev'], {
      env: { ...process.env, PIDFILE: pidFile },
    });
    writeFileSync(pidFile, `${standIn.pid}\n`);
    // Asynchronously, so this process reaps the stand-in when it exits (a zombie would still answer kill -0).
    const stop = spawn('bash', [path.join(ROOT, 'temporal/dev-server.sh'), 'stop'], { env: s.env });
    let stderr = '';
    stop.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    expect(await new Promise((r) => stop.once('exit', r))).toBe(0);
    expect(stderr).toContain(`stopped (pid ${standIn.pid})`);
    expect(readFileSync(pidFile, 'utf8').trim()).toBe('424242');
  });

  it('refuses a port taken by another process, naming it', async () => {
    const s = await newServer();
    const squatter = createServer().listen(s.port, '127.0.0.1');
    await new Promise((r) => squatter.once('listening', r));
    try {
      const r = s.run('start');
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain(`port ${s.port} on 127.0.0.1 is taken by another process`);
    } finally {
      squatter.close();
    }
  });

  it('names what to install when there is no Go and no CLI', () => {
    const emptyCache = mkdtempSync(path.join(tmpdir(), 'rollflow-cache-'));
    const r = spawnSync('bash', [path.join(ROOT, 'temporal/ensure-cli.sh')], {
      env: { PATH: '/usr/bin:/bin', ROLLFLOW_CACHE: emptyCache, HOME: process.env.HOME },
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('no Temporal CLI >= v1.5 on PATH and no Go toolchain');
    expect(r.stderr).toContain('Install Go');
  });
});
