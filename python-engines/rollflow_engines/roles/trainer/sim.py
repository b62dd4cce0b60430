"""The sim trainer: no model, a latency model and honest batch statistics.

A train step sleeps ``sim_seconds_per_sample × samples`` (an asyncio sleep, so
a cancelled request stops it) and reports:

- real reward, advantage, size and staleness statistics of the batch;
- the registered objective evaluated with π_θ := π_old (the sim has no policy of
  its own): the loss value is meaningful for the batch, ratio_mean is exactly 1,
  clipfrac and approxkl are 0 — by construction, not a silent bug. Likewise
  π_prox := π_old and π_ref := π_old (so the KL is 0), the value head is V := 0
  (so GAE gives discounted rewards), and there is no entropy (no logits): the
  entropy bonus and ``losses/entropy`` are absent;
- a fake but deterministic grad_norm, sqrt(mean A²) over loss tokens.

/logprobs returns deterministic values from a formula over (seed, version,
position, token) so callers can test plumbing; they are not a distribution.
"""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import torch

from ...algorithms import objective
from ...liveness import deadlock
from .backend import RecordedStep, TrainerBackend
from .batch import PreparedBatch, batch_metrics, fill_advantages, micro_inputs
from .contracts import TokenSequence, TrainStepRequest, TrainStepResponse


def sim_logprob(seed: int, version: int, position: int, token: int) -> float:
    """A value in [-3.05, -0.05], fixed by its arguments."""
    return -(0.05 + 3.0 * ((token * 31 + position * 17 + seed * 13 + version * 7) % 97) / 96)


class SimTrainer(TrainerBackend):
    name = "sim"

    def __init__(self, options):
        super().__init__(options)
        self._steps_started = 0  # this server's, for sim_deadlock_after_steps

    async def train_step(self, req: TrainStepRequest, batch: PreparedBatch) -> TrainStepResponse:
        limit = self.options.sim_deadlock_after_steps
        if limit is not None and self._steps_started >= limit:
            await deadlock(f"trainer: train step {req.step} never finishes (sim_deadlock_after_steps {limit})")
        self._steps_started += 1
        started = time.perf_counter()
        await asyncio.sleep(self.options.sim_seconds_per_sample * len(batch.samples))
        m = micro_inputs(batch, list(range(len(batch.samples))), pad_id=0)
        needs = batch.needs
        m.prox_logprobs = m.old_logprobs if needs.prox_logprobs else None
        m.ref_logprobs = m.old_logprobs if needs.ref_logprobs else None
        m.old_values = torch.zeros_like(m.old_logprobs) if needs.values else None
        fill_advantages(batch, [m])
        x = m.loss_inputs(m.old_logprobs, values=m.old_values)
        _total, loss_metrics = objective(batch.policy_loss, x, batch.loss_params)
        metrics = batch_metrics(batch, self.version, [m])
        metrics.update({k: float(v) for k, v in loss_metrics.items()})
        adv = m.advantages
        metrics["grad_norm"] = float(((adv * adv * m.mask).sum() / m.mask.sum().clamp(min=1)).sqrt())
        metrics["actor/optimizer_steps"] = float(req.ppo_epochs)
        metrics["timing/train_s"] = time.perf_counter() - started
        return self.commit(req, batch, metrics)

    async def logprobs(self, sequences: list[TokenSequence], temperature: float) -> list[list[float]]:
        seed = self.options.seed
        return [[sim_logprob(seed, self.version, len(s.prompt_ids) + t, tok) for t, tok in enumerate(s.response_ids)]
                for s in sequences]

    async def save_state(self, directory: Path) -> None:
        # Everything the sim has is the version, recorded by the checkpoint's meta file.
        (directory / "sim_state.json").write_text(json.dumps({"seed": self.options.seed}))

    async def load_state(self, directory: Path, version: int, last_step: RecordedStep | None) -> None:
        self.version, self.last_step = version, last_step

    async def export_weights(self, directory: Path) -> None:
        # No weights: the manifest written beside this (rollflow_export.json) is the whole export.
        return None

    def describe(self) -> dict:
        return {**super().describe(), "seed": self.options.seed}
