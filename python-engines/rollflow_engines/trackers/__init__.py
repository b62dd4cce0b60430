"""Experiment trackers for a run (ROLL's ``track_with``): tensorboard and wandb.

The worker starts one ``python -m rollflow_engines track`` process per run and
writes JSON lines to its stdin (see ``main.py``); the trackers here get every
record of the run's metrics.jsonl and validation.jsonl, and the run config as
hyper-parameters.
"""
