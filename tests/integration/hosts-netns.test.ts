// The simulated hosts of hosts/netns.sh, with real processes: hosts reach each other only over their switch,
// keep every write to themselves, lose their cable and their power on demand, and `down` leaves nothing behind.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/dev-server';
import { TestHosts } from './helpers/hosts';

const PORT = 8000;
const proof = `hosts-proof-${process.pid}`;
let hosts: TestHosts;
const servers: Record<string, ChildProcess> = {};

/** An HTTP server on `host` serving its own /tmp/www, whose file `who` holds the host's name; resolves once it listens. */
async function serve(host: string): Promise<ChildProcess> {
  expect(hosts.sh(host, 'mkdir -p /tmp/www && echo "$ROLLFLOW_HOST" >/tmp/www/who').status).toBe(0);
  const server = hosts.spawn(host, ['python3', '-u', '-m', 'http.server', '--bind', hosts.addr(host), String(PORT), '--directory', '/tmp/www']);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    // http.server prints "Serving HTTP on ..." once its socket is bound and listening.
    server.stdout!.on('data', (d: Buffer) => ((out += d.toString()), out.includes('Serving HTTP') && resolve()));
    server.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    server.on('exit', (code) => reject(new Error(`the server on ${host} exited (${code}): ${out}`)));
  });
  return server;
}

/** GET `who` of `to`'s server from host `from`, with curl giving up after `maxTime` seconds. */
const get = (from: string, to: string, maxTime: number) =>
  hosts.exec(from, ['curl', '-sS', '--max-time', String(maxTime), `http://${hosts.addr(to)}:${PORT}/who`]);

beforeAll(async () => {
  hosts = TestHosts.up(['a', 'b', 'c', 'd']);
  servers.a = await serve('a');
  servers.c = await serve('c');
});

afterAll(() => {
  rmSync(path.join('/', proof), { force: true }); // only there if the read-only root failed
  hosts?.down();
});

describe('simulated hosts (hosts/netns.sh)', () => {
  it('hosts reach each other over their switch; the root namespace is not on it', () => {
    const addrs = ['a', 'b', 'c', 'd'].map((h) => hosts.addr(h));
    expect(new Set(addrs).size).toBe(4);
    expect(get('b', 'a', 10)).toMatchObject({ status: 0, stdout: 'a\n' });
    expect(get('d', 'c', 10)).toMatchObject({ status: 0, stdout: 'c\n' });

    // No interface of the root namespace is on the hosts' subnet, so a's address is routed out to the machine's
    // own network, whose egress may answer anything (a proxy here does, with a 404): a's answer never comes back.
    const subnet = addrs[0]!.replace(/\.\d+$/, '.');
    expect(spawnSync('ip', ['-4', '-o', 'addr'], { encoding: 'utf8' }).stdout).not.toContain(subnet);
    expect(spawnSync('ip', ['-4', 'route', 'get', addrs[0]!], { encoding: 'utf8' }).stdout).toMatch(/ via /);
    const fromRoot = spawnSync('curl', ['-sS', '--max-time', '3', `http://${addrs[0]}:${PORT}/who`], { encoding: 'utf8' });
    expect(fromRoot.stdout).not.toBe('a\n');
  });

  it("a host's writes stay its own, and the software image is read-only", () => {
    const wrote = hosts.sh('b', `echo b >/tmp/${proof} && echo b >"$HOME/${proof}" && echo b >"$ROLLFLOW_STATE/${proof}" && echo "$HOME"`);
    expect(wrote.status, wrote.stderr).toBe(0);
    const home = wrote.stdout.trim();
    const written = [`/tmp/${proof}`, `${home}/${proof}`, path.join(ROOT, '.state', proof)];
    expect(hosts.exec('b', ['cat', ...written]).stdout).toBe('b\nb\nb\n');

    // Host c has the same paths, but its own (empty) places behind them, and no view of the disks.
    expect(hosts.sh('c', `echo "$HOME"`).stdout.trim()).toBe(home);
    for (const file of written) expect(hosts.exec('c', ['test', '-e', file]).status, file).toBe(1);
    expect(hosts.exec('c', ['ls', '-A', path.join(hosts.dir, 'disks')]).stdout).toBe('');
    // Nor does the root namespace at those paths; b's writes are on b's disk.
    for (const file of written) expect(existsSync(file), file).toBe(false);
    expect(readFileSync(path.join(hosts.dir, 'disks', 'b', 'home', proof), 'utf8')).toBe('b\n');
    expect(readFileSync(path.join(hosts.dir, 'disks', 'b', 'state', proof), 'utf8')).toBe('b\n');

    for (const file of [path.join(ROOT, proof), path.join(ROOT, 'hosts', proof), path.join('/', proof)]) {
      const r = hosts.exec('b', ['touch', file]);
      expect(r.status, file).not.toBe(0);
      expect(r.stderr).toContain('Read-only file system');
    }
  });

  it('a cut link drops the traffic to its host, and restoring it brings the host back', () => {
    // b knows c's MAC address from this answer, so the request below sends its packets into the cut at once
    // (without it, b would first ask for the address, and give up with "no route to host" after 3 s).
    expect(get('b', 'c', 10)).toMatchObject({ status: 0, stdout: 'c\n' });
    hosts.link('c', 'down');
    expect(hosts.status()).toMatch(/^c\s+\S+\s+link down/m);
    const cut = get('b', 'c', 3);
    expect(cut.stdout).toBe('');
    expect(cut.status).toBe(28); // curl's own timeout: the packets vanish, nothing refuses or resets
    hosts.link('c', 'up');
    expect(get('b', 'c', 20)).toMatchObject({ status: 0, stdout: 'c\n' });
  });

  it('a killed host has no process left, and the others carry on', async () => {
    const exited = once(servers.c!, 'exit');
    // A daemon that a command started with setsid stays on the host after that command has returned.
    expect(hosts.sh('c', 'setsid sleep infinity >/dev/null 2>&1 </dev/null &').status).toBe(0);
    const commands = hosts.pids('c').map((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, 2).join(' '));
    expect(commands).toContain('sleep infinity');
    expect(hosts.pids('c')).toContain(servers.c!.pid);
    hosts.kill('c');
    expect(hosts.pids('c')).toEqual([]);
    expect((await exited)[1]).toBe('SIGKILL');
    expect(get('b', 'c', 5).status).not.toBe(0);
    expect(get('b', 'a', 10)).toMatchObject({ status: 0, stdout: 'a\n' });
  });

  it('down leaves no namespace, mount or directory of the set', async () => {
    const exited = once(servers.a!, 'exit');
    hosts.down();
    await exited;
    expect(spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout).not.toMatch(new RegExp(`^${hosts.set}-`, 'm'));
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(hosts.dir);
    expect(existsSync(hosts.dir)).toBe(false);
    hosts.down(); // idempotent
  });
});
