// The shared vocabulary of rollflow: names, keys, seeds and record shapes that
// cross folder boundaries. The floor of src/: it imports nothing of src/, and it
// is workflow code (the workflow bundle imports it), so it stays pure.
export type * from './engines';
export * from './env-loss';
export * from './errors';
export * from './heartbeat';
export * from './ids';
export * from './metrics';
export * from './roles';
export * from './seeds';
export * from './store-location';
export type * from './tracking';
