import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    setupFiles: ['tests/setup.ts'],
    // Integration tests start real Temporal dev servers and engine processes;
    // generous limits keep them honest on a loaded 2-core machine.
    testTimeout: 180_000,
    // Set-up hooks bring whole stacks up (a dev server, engine processes, a
    // worker); on a cold CI machine two engines importing torch beside another
    // test file can take minutes. A hook that hangs still fails.
    hookTimeout: 900_000,
    maxWorkers: 2,
  },
});
