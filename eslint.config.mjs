// Lint, and above all: workflow code stays deterministic. Temporal replays
// workflows from history, so src/workflows/ (and src/core/, which it imports)
// may not touch Node built-ins, the network, the file system or the bridge; it
// sees activities only as types. Files stay under 400 lines.
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
    // A file that grows past this holds two things: split it by concept. Every line counts, comments and blank
    // ones too (the reader holds them all, and it is the figure `wc -l` gives).
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
    },
  },
  {
    // src/core/ is workflow code too: the workflow bundle imports it (and its own floor rule follows).
    files: ['src/workflows/**/*.ts', 'src/core/**/*.ts', 'tests/**/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'workflow code is replayed: no Node built-ins (use an activity)' })),
          patterns: [
            { regex: '(^|/)activities(/.*)?$', allowTypeImports: true, message: 'workflows reach activities only through `import type` + proxyActivities (the errors they match are in src/core)' },
            // The bridge's errors.ts (plain classes, no I/O) is the exception: retry policies name its non-retryable errors.
            { regex: '(^|/)gpu-bridge(/(?!errors$).*)?$', allowTypeImports: true, message: 'workflows reach the bridge only through `import type`, but for its errors.ts' },
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
  {
    // src/core/ is the floor: the shared vocabulary (ids, keys, seeds, record shapes, named errors) imports
    // nothing of src/ outside it. After the workflow block, which turns the base rule off. The other layers
    // are checked by tests/unit/import-layers.test.ts.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./', message: 'src/core/ is the bottom layer: it imports nothing of src/ outside it' }] }],
    },
  },
);
