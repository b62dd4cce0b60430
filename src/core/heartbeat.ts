/**
 * How often long activities heartbeat, and how long the server waits for a
 * beat before it takes the worker for dead and retries the call elsewhere.
 * The timeout bounds how long the death of a worker that nobody restarts in
 * place stalls its calls (one restarted on its host reclaims them at once:
 * src/worker/reclaim.ts); the interval leaves room for two late beats on a
 * busy machine, and every beat is a write on the Temporal server, so it is
 * no shorter than that needs. Here, not beside activities/heartbeat.ts,
 * because workflow code (activity-options.ts) reads the timeout and must not
 * import activity code, and the worker reads the interval.
 */
export const HEARTBEAT_EVERY_MS = 10_000;
export const HEARTBEAT_TIMEOUT = '30 seconds';
