// Lint, and above all: workflow code stays deterministic. Temporal replays
// workflows from history, so src/workflows/ may not touch Node built-ins, the
// network, the file system or the bridge; it sees activities only as types.
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', '.state/**', '.venv/**', 'python-engines/**', 'runs/**', 'bin/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/workflows/**/*.ts', 'tests/**/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'workflow code is replayed: no Node built-ins (use an activity)' })),
          patterns: [
            // The bridge's errors.ts (plain classes, no I/O) is the exception: retry policies name its non-retryable errors.
            { regex: '(^|/)(activities|gpu-bridge)(/(?!errors$).*)?$', allowTypeImports: true, message: 'workflows reach activities and the bridge only through `import type` + proxyActivities' },
            { group: ['**/stack/**', '**/cli/**', '**/worker/**', '**/client/**', '**/logging', '**/configs/load', '**/paths'], message: 'this module does I/O; workflow code must not import it' },
            { group: ['@temporalio/client', '@temporalio/worker', '@temporalio/activity', '@temporalio/testing', 'pino', 'pino-*', 'undici', 'axios', 'yaml'], message: 'not deterministic workflow code' },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        ...['fetch', 'process', 'require', 'XMLHttpRequest', 'WebSocket', 'Buffer', '__dirname', '__filename'].map((name) => ({ name, message: 'workflow code is replayed: no I/O or process state' })),
      ],
    },
  },
);
