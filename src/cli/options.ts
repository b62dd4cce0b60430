/** The config argument every command shares: an optional YAML path plus repeatable --set overrides. */
import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig, type LoadedConfig } from '../configs';

export interface ConfigOptions {
  set?: string[];
}

export function withConfigOptions(cmd: Command): Command {
  return cmd
    .argument('[config]', 'run config YAML (default: built-in defaults, the embedded stack on this machine)')
    .option('--set <key.path=value>', 'override one config value; repeatable', (v: string, prev: string[] = []) => [...prev, v]);
}

export function loadFromArgs(file: string | undefined, opts: ConfigOptions): { loaded: LoadedConfig; args: string[] } {
  const sets = opts.set ?? [];
  const loaded = loadConfig(file, sets);
  // The same config, re-creatable in a child process started from another cwd.
  const args = [...(file ? [path.resolve(file)] : []), ...sets.flatMap((s) => ['--set', s])];
  return { loaded, args };
}
