// The workflows a rollflow worker registers; one file per workflow.
export { smoke } from './smoke';
export { run } from './run';
export { group } from './group';
export { lockstepRollout } from './lockstep';
export { trajectory } from './trajectory';
export { trainStep } from './train-step';
export { validate } from './validate';
