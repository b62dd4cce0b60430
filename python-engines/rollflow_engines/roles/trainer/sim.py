"""The sim trainer: no model, a latency model and honest batch statistics.

A train step sleeps ``sim_seconds_per_sample × samples`` (an asyncio sleep, so
a cancelled request stops it) and reports:

- real reward, advantage, size and staleness statistics of the batch;
- the registered loss evaluated with π_θ := π_old (the sim has no policy of
  its own): the loss value is meaningful for the batch, ratio_mean is exactly 1,
  clipfrac and approxkl are 0 — by construction, not a silent bug;
- a fake but deterministic grad_norm, sqrt(mean A²) over loss tokens.

/logprobs returns deterministic values from a formula over (seed, version,
position, token) so callers can test plumbing; they are not a distribution.
"""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from ...algorithms import POLICY_LOSSES
from .backend import RecordedStep, TrainerBackend
from .batch import PreparedBatch, batch_metrics, loss_mask_of, per_token
from .contracts import TokenSequence, TrainStepRequest, TrainStepResponse


def sim_logprob(seed: int, version: int, position: int, token: int) -> float:
    """A value in [-3.05, -0.05], fixed by its arguments."""
    return -(0.05 + 3.0 * ((token * 31 + position * 17 + seed * 13 + version * 7) % 97) / 96)


class SimTrainer(TrainerBackend):
    name = "sim"

    async def train_step(self, req: TrainStepRequest, batch: PreparedBatch) -> TrainStepResponse:
        started = time.perf_counter()
        await asyncio.sleep(self.options.sim_seconds_per_sample * len(batch.samples))
        samples = batch.samples
        width = max(len(s.response_ids) for s in samples)
        old = per_token(samples, [s.old_logprobs for s in samples], width)
        mask = loss_mask_of(samples, width)
        adv = batch.advantages[:, None].expand(-1, width)
        loss, loss_metrics = POLICY_LOSSES[req.pg_variant](old, old, adv, mask, batch.loss_params)
        metrics = batch_metrics(batch, self.version)
        metrics.update({k: float(v) for k, v in loss_metrics.items()})
        metrics["losses/total"] = float(loss)
        metrics["grad_norm"] = float(((adv * adv * mask).sum() / mask.sum().clamp(min=1)).sqrt())
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
        return {"backend": self.name, "seed": self.options.seed}
