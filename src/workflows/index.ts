// The workflows a rollflow worker registers; one file per workflow.
export { smoke } from './smoke';
