"""The learning-rate schedule: warmup, then constant, linear or cosine decay.

The schedule is transformers' own (``get_scheduler``, the functions behind the
Hugging Face Trainer's ``lr_scheduler_type``), evaluated at the train step
being taken rather than stepped along with the optimizer. So the learning rate
of train step k is a pure function of k: a trainer restored from a checkpoint,
or recovered by replaying stored batches, uses exactly the rate the lost one
would have, without saving scheduler state.

Steps here are train steps (policy versions), as the run counts them: every
optimizer update inside train step k (mini-batches, PPO epochs) uses the
rate of step k. With one optimizer update per train step (the default) this
is the Hugging Face Trainer's count.
"""
from __future__ import annotations

from functools import cache

LR_SCHEDULER_TYPES = ("constant", "constant_with_warmup", "linear", "cosine")


@cache
def _multiplier(name: str, warmup_steps: int, total_steps: int | None):
    # Imported here: the trainer's options name the schedules, and a sim trainer or an offline config
    # check must not pay for importing torch and transformers.
    import torch
    from transformers import get_scheduler

    # get_scheduler builds a LambdaLR on an optimizer; a one-parameter SGD lends it one, and only its lambda is kept.
    probe = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    return get_scheduler(name, probe, num_warmup_steps=warmup_steps, num_training_steps=total_steps).lr_lambdas[0]


def lr_factor(name: str, warmup_steps: int, total_steps: int | None, step: int) -> float:
    """The factor on the base learning rate at train step ``step`` (0-based)."""
    return float(_multiplier(name, warmup_steps, total_steps)(step))


def scheduled_lr(options, step: int) -> float:
    """The learning rate of train step ``step`` under a trainer's options."""
    return options.learning_rate * lr_factor(options.lr_scheduler_type, options.warmup_steps, options.lr_total_steps, step)


def set_lr(optimizers, lr: float) -> None:
    for optimizer in optimizers:
        for group in optimizer.param_groups:
            group["lr"] = lr
