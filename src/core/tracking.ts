/** What a run asks of its trackers (RunPlan.tracking): plain data, carried in the run's plan. */
export interface TrackingSpec {
  trackWith: ('tensorboard' | 'wandb' | 'stdout')[];
  /** tracker_kwargs (log_dir, project, name, notes, tags). */
  kwargs: Record<string, unknown>;
  /** The run config, logged once as hyper-parameters. */
  hparams: Record<string, unknown>;
}
