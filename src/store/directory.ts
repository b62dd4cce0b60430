import { access, mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { cleanStaleTemps, diskFullOr, isTempName, writeFileDurable } from './durable';
import { SampleNotFoundError } from './errors';
import { checkKey, parseJsonLines, type SampleStore } from './store';

/**
 * A sample store in a local directory: one file per key, written durably (durable.ts). The first write into a
 * directory by this process removes the temp files a killed writer left there.
 */
export class DirectorySampleStore implements SampleStore {
  private readonly cleaned = new Set<string>();

  constructor(readonly root: string) {}

  locate(key: string): string {
    return path.join(this.root, checkKey(key));
  }

  async put(key: string, value: unknown): Promise<void> {
    await this.write(key, JSON.stringify(value));
  }

  async putLines(key: string, values: readonly unknown[]): Promise<void> {
    await this.write(key, values.map((v) => `${JSON.stringify(v)}\n`).join(''));
  }

  async get<T>(key: string): Promise<T> {
    return JSON.parse(await this.read(key)) as T;
  }

  async getLines<T>(key: string): Promise<T[]> {
    return parseJsonLines<T>(await this.read(key));
  }

  async keys(dir: string): Promise<string[]> {
    const entries = await readdir(this.locate(dir), { withFileTypes: true }).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return [];
      throw e;
    });
    return entries
      .filter((e) => e.isFile() && !isTempName(e.name))
      .map((e) => e.name)
      .sort();
  }

  private async read(key: string): Promise<string> {
    try {
      return await readFile(this.locate(key), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new SampleNotFoundError(`no object "${key}" in ${this.root}`);
      throw e;
    }
  }

  async has(key: string): Promise<boolean> {
    try {
      await access(this.locate(key));
      return true;
    } catch {
      return false;
    }
  }

  private async write(key: string, text: string): Promise<void> {
    const file = this.locate(key);
    const dir = path.dirname(file);
    await mkdir(dir, { recursive: true }).catch((e: unknown) => {
      throw diskFullOr(e, dir);
    });
    if (!this.cleaned.has(dir)) {
      this.cleaned.add(dir);
      await cleanStaleTemps(dir);
    }
    await writeFileDurable(file, text);
  }
}
