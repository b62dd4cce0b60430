/**
 * The sandbox processes one env server still has: processes of a sandbox uid in that server's process tree.
 * Counted under the server, not machine-wide: other env servers on the machine (test files run side by side)
 * have sandboxes of their own open at the same time. A sandboxed command cannot leave the tree while its server
 * lives: it runs in a pid namespace (bwrap --unshare-pid), where orphans are adopted by the namespace's init,
 * a child of the server's bwrap.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { stateDir } from '../paths';
import { engineProcess } from './engines';
import { livePid } from './processes';

/** The sandbox's uid pool (python-engines/rollflow_engines/sandbox/uids.py UID_BASE, POOL_SIZE). */
const SANDBOX_UID_BASE = 1_500_000_000;
const SANDBOX_UID_POOL = 4096;

/** A process's parent and real uid from /proc/<pid>/status; undefined when it exited while we looked. */
function parentAndUid(pid: number): { ppid: number; uid: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+)`, 'm'))?.[1]);
    return { ppid: field('PPid'), uid: field('Uid') };
  } catch {
    return undefined;
  }
}

/** Pids of sandbox-uid processes descended from `serverPid`. */
export const sandboxProcessesUnder = (serverPid: number): number[] => descendants(serverPid, (uid) => uid >= SANDBOX_UID_BASE && uid < SANDBOX_UID_BASE + SANDBOX_UID_POOL);

/** Pids of the processes descended from `root` (children, their children, …) whose real uid passes `ofUid`. */
export function descendants(root: number, ofUid: (uid: number) => boolean): number[] {
  const children = new Map<number, { pid: number; uid: number }[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = parentAndUid(Number(name));
    if (p) children.set(p.ppid, [...(children.get(p.ppid) ?? []), { pid: Number(name), uid: p.uid }]);
  }
  const found: number[] = [];
  const stack = [root];
  while (stack.length) {
    for (const c of children.get(stack.pop()!) ?? []) {
      if (ofUid(c.uid)) found.push(c.pid);
      stack.push(c.pid);
    }
  }
  return found;
}

/** The live env server serving `url` that a stack with state dir `state` launched; throws when there is none. */
export function envServerPid(url: string, state = stateDir()): number {
  const proc = engineProcess('env', url, state);
  const pid = livePid(proc);
  if (pid === undefined) throw new Error(`no live env server for ${url} (pid file ${proc.pidFile}): the stack must have launched it`);
  return pid;
}
