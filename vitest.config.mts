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
    // Three files at once on 2 cores: most integration tests wait on servers and
    // sandboxes, so a third keeps the CPU busy (about 73 % against 64 % with two;
    // 952 tests in 21.4 min against 25.0 on this 2-core machine).
    maxWorkers: 3,
  },
});
