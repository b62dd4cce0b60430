// The determinism lint must actually fire: each snippet below, placed under
// src/workflows/, breaks replay and must be reported; type-only imports pass.
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = path.join(__dirname, '../..');
const eslint = new ESLint({ cwd: root });

async function problems(code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, 'src/workflows/linted.ts') });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

describe('workflow determinism lint', () => {
  it.each([
    ["import fs from 'fs';\nexport const x = fs;", 'a Node built-in'],
    ["import { readFileSync } from 'node:fs';\nexport const x = readFileSync;", 'a node: built-in'],
    ["import { checkEngineHealth } from '../activities';\nexport const x = checkEngineHealth;", 'an activity value import'],
    ["import { requestJson } from '../gpu-bridge/http';\nexport const x = requestJson;", 'the bridge'],
    ["import { EngineRejectedError } from '../gpu-bridge';\nexport const x = EngineRejectedError;", 'the bridge through its index'],
    ["import { loadConfig } from '../configs/load';\nexport const x = loadConfig;", 'config file I/O'],
    ["import { Client } from '@temporalio/client';\nexport const x = Client;", 'the Temporal client'],
    ['export async function f() { return fetch("http://x"); }', 'fetch'],
    ['export const env = process.env.HOME;', 'process'],
  ])('rejects %s (%s)', async (code) => {
    expect((await problems(code)).some((r) => r.includes('no-restricted'))).toBe(true);
  });

  it('accepts type-only imports of activities and the bridge', async () => {
    const code = "import type * as activities from '../activities';\nimport type { EngineTarget } from '../gpu-bridge';\nexport type A = typeof activities;\nexport type B = EngineTarget;\n";
    expect(await problems(code)).toEqual([]);
  });

  it('accepts the error lists of a boundary (retry policies name them)', async () => {
    const code = "import { NON_RETRYABLE_ENGINE_ERRORS } from '../gpu-bridge/errors';\nimport { NON_RETRYABLE_STORE_ERRORS } from '../store/errors';\nexport const x = [...NON_RETRYABLE_ENGINE_ERRORS, ...NON_RETRYABLE_STORE_ERRORS];\n";
    expect(await problems(code)).toEqual([]);
  });
});
