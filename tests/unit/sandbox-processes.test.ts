// The process-tree walk behind "what sandbox processes does this env server still have": a grandchild of this
// test is found under it (the walk follows children's children), and a process outside the tree is not.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, expect, it } from 'vitest';
import { descendants } from '../../src/stack/sandbox-processes';

const started: ChildProcess[] = [];
afterEach(() => {
  for (const c of started.splice(0)) c.kill('SIGKILL');
});

/** A shell that starts a sleep and reports the sleep's pid: a grandchild of this test. */
async function grandchild(): Promise<{ shell: ChildProcess; sleepPid: number }> {
  const shell = spawn('sh', ['-c', 'sleep 600 & echo $!; wait'], { stdio: ['ignore', 'pipe', 'ignore'] });
  started.push(shell);
  const line = await new Promise<string>((resolve) => shell.stdout!.once('data', (d: Buffer) => resolve(d.toString())));
  return { shell, sleepPid: Number(line.trim()) };
}

it('finds a grandchild under this process and under its parent shell, with a uid filter that passes ours', async () => {
  const { shell, sleepPid } = await grandchild();
  const mine = (uid: number) => uid === process.getuid!();
  expect(descendants(process.pid, mine)).toEqual(expect.arrayContaining([shell.pid, sleepPid]));
  expect(descendants(shell.pid!, mine)).toEqual([sleepPid]);
  expect(descendants(sleepPid, mine)).toEqual([]);
  expect(descendants(process.pid, () => false)).toEqual([]);
});
