"""The torch trainer: a Hugging Face causal LM on CPU (or whatever device torch
defaults to), AdamW, micro-batches with gradient accumulation, grad clipping.

One train step:

    advantages (once, from the rewards)                       batch.prepare_batch
    for epoch in ppo_epochs:
        for mini-batch of micro_batch_size × gradient_accumulation_steps samples:
            for micro-batch:
                log π_θ of each response token  (softmax(logits / temperature))
                loss = POLICY_LOSSES[pg_variant](log π_θ, log π_old, A, mask)
                backward(loss · weight_micro / weight_mini)   exact aggregate over the mini-batch
            clip grad norm; AdamW step (skipped if the norm is not finite)

log π_old is the sample's ``old_logprobs`` (the inference server's), so the
PPO ratio of the first epoch measures the train/infer mismatch plus the
staleness of the sample; it is never taken to be 1.

Dropout stays off (the model is kept in eval mode): the logprobs a train step
computes equal /logprobs' and the inference server's for the same weights.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from ...algorithms import LOSS_AGGREGATIONS, POLICY_LOSSES
from ...errors import RequestError
from ...models import load_model
from .backend import MetricAverager, RecordedStep, TrainerBackend, run_in_thread
from .batch import MicroBatch, PreparedBatch, batch_metrics, loss_mask_of, pad_sequences, per_token, response_logprobs
from .contracts import TokenSequence, TrainStepRequest, TrainStepResponse

STATE_FILE = "trainer_state.pt"


@dataclass
class MicroInputs:
    tokens: MicroBatch
    old_logprobs: Tensor  # [b, T]
    advantages: Tensor  # [b, T]
    mask: Tensor  # [b, T] loss mask (response mask × sample loss_mask)


class TorchTrainer(TrainerBackend):
    name = "torch"

    def __init__(self, options):
        super().__init__(options)
        if options.torch_threads:
            torch.set_num_threads(options.torch_threads)
        self.model, self.tokenizer = load_model(options.model, options.model_seed, options.model_cache_dir)
        self.model.eval()  # no dropout: see the module docstring
        tok = self.tokenizer
        self.pad_id = next(i for i in (tok.pad_token_id, tok.eos_token_id, 0) if i is not None)
        self.vocab_size = self.model.get_input_embeddings().num_embeddings
        self.optimizer = self._new_optimizer()
        # Seeded for anything random a step may do (dropout in other models, shuffling); saved by /save.
        torch.manual_seed(options.seed)

    def _new_optimizer(self) -> torch.optim.AdamW:
        o = self.options
        return torch.optim.AdamW(self.model.parameters(), lr=o.learning_rate, weight_decay=o.weight_decay,
                                 betas=(o.adam_beta1, o.adam_beta2), eps=o.adam_eps)

    def describe(self) -> dict:
        return {"backend": self.name, "model": self.options.model, "model_seed": self.options.model_seed}

    # ---- forward

    def _forward_logprobs(self, mb: MicroBatch, temperature: float) -> Tensor:
        logits = self.model(input_ids=mb.input_ids, attention_mask=mb.attention_mask,
                            position_ids=mb.position_ids, use_cache=False).logits
        return response_logprobs(logits, mb, temperature)

    def _micro_inputs(self, batch: PreparedBatch, index: list[int]) -> MicroInputs:
        samples = [batch.samples[i] for i in index]
        tokens = pad_sequences([(s.prompt_ids, s.response_ids) for s in samples], self.pad_id, self.options.padding_side)
        width = tokens.response_mask.shape[1]
        old = per_token(samples, [s.old_logprobs for s in samples], width)
        adv = batch.advantages[index][:, None].expand(-1, width)
        return MicroInputs(tokens, old, adv, loss_mask_of(samples, width) * tokens.response_mask)

    # ---- train step

    async def train_step(self, req: TrainStepRequest, batch: PreparedBatch) -> TrainStepResponse:
        return await run_in_thread(self._train_step, req, batch)

    def _train_step(self, req: TrainStepRequest, batch: PreparedBatch) -> TrainStepResponse:
        started = time.perf_counter()
        o = self.options
        loss_fn, agg = POLICY_LOSSES[req.pg_variant], LOSS_AGGREGATIONS[req.loss_agg_mode]
        n = len(batch.samples)
        per_update = o.micro_batch_size * o.gradient_accumulation_steps if o.gradient_accumulation_steps else n
        minis = [list(range(start, min(start + per_update, n))) for start in range(0, n, per_update)]
        inputs = [[self._micro_inputs(batch, mini[j:j + o.micro_batch_size]) for j in range(0, len(mini), o.micro_batch_size)]
                  for mini in minis]
        params = [p for p in self.model.parameters() if p.requires_grad]
        averaged, grad_norms, updates, skipped = MetricAverager(), [], 0, 0

        for _epoch in range(req.ppo_epochs):
            for mini in inputs:
                weights = [agg.weight(m.mask) for m in mini]
                total = sum(weights)
                if total == 0:
                    continue  # every token of this mini-batch is masked out
                self.optimizer.zero_grad(set_to_none=True)
                for m, w in zip(mini, weights):
                    logprobs = self._forward_logprobs(m.tokens, req.temperature)
                    loss, loss_metrics = loss_fn(logprobs, m.old_logprobs, m.advantages, m.mask, batch.loss_params)
                    (loss * (w / total)).backward()
                    averaged.add(loss_metrics, w)
                norm = torch.nn.utils.clip_grad_norm_(params, o.max_grad_norm)
                grad_norms.append(float(norm))
                if torch.isfinite(norm):
                    self.optimizer.step()
                    updates += 1
                else:
                    skipped += 1
        self.optimizer.zero_grad(set_to_none=True)

        metrics = batch_metrics(batch, self.version)
        metrics.update(averaged.means())
        metrics["losses/total"] = metrics.get("losses/pg_loss", 0.0)  # the only loss term so far
        metrics["grad_norm"] = sum(grad_norms) / len(grad_norms) if grad_norms else 0.0
        metrics["actor/optimizer_steps"] = float(updates)
        metrics["actor/skipped_steps"] = float(skipped)
        metrics["actor/lr"] = float(self.optimizer.param_groups[0]["lr"])
        metrics["timing/train_s"] = time.perf_counter() - started
        return self.commit(req, batch, metrics)

    # ---- logprobs

    async def logprobs(self, sequences: list[TokenSequence], temperature: float) -> list[list[float]]:
        for i, s in enumerate(sequences):
            for name in ("prompt_ids", "response_ids"):
                bad = [t for t in getattr(s, name) if t >= self.vocab_size]
                if bad:
                    raise RequestError(f"sequences[{i}].{name}", f"token id {bad[0]} is outside the vocabulary (size {self.vocab_size})", bad[0])
        return await run_in_thread(self._logprobs, sequences, temperature)

    @torch.no_grad()
    def _logprobs(self, sequences: list[TokenSequence], temperature: float) -> list[list[float]]:
        out: list[list[float]] = []
        size = self.options.micro_batch_size
        for start in range(0, len(sequences), size):
            chunk = sequences[start:start + size]
            mb = pad_sequences([(s.prompt_ids, s.response_ids) for s in chunk], self.pad_id, self.options.padding_side)
            logprobs = self._forward_logprobs(mb, temperature)
            out.extend(row[:len(s.response_ids)].tolist() for row, s in zip(logprobs, chunk))
        return out

    # ---- checkpoints and export

    async def save_state(self, directory: Path) -> None:
        await run_in_thread(self._save, directory)

    def _save(self, directory: Path) -> None:
        torch.save({
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "torch_rng": torch.get_rng_state(),
        }, directory / STATE_FILE)

    async def load_state(self, directory: Path, version: int, last_step: RecordedStep | None) -> None:
        await run_in_thread(self._load, directory, version, last_step)

    def _load(self, directory: Path, version: int, last_step: RecordedStep | None) -> None:
        file = directory / STATE_FILE
        try:
            state = torch.load(file, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - any unreadable file is the caller's bad path
            raise RequestError("path", f"cannot read {file}: {e}", str(directory)) from e
        ours = self.model.state_dict()
        theirs = state.get("model", {}) if isinstance(state, dict) else {}
        wrong = sorted(set(ours) ^ set(theirs)) or [k for k in ours if ours[k].shape != theirs[k].shape]
        if wrong:
            raise RequestError("path", f"checkpoint does not fit this model ({self.options.model}); first mismatch: {wrong[0]}", str(directory))
        if not isinstance(state.get("torch_rng"), torch.Tensor):
            raise RequestError("path", "checkpoint has no RNG state", str(directory))
        optimizer = self._new_optimizer()
        try:
            optimizer.load_state_dict(state["optimizer"])
        except (KeyError, ValueError) as e:
            raise RequestError("path", f"checkpoint optimizer state does not fit this model: {e}", str(directory)) from e
        # Validated: now change state. The current options' hyperparameters win over the saved ones.
        self.model.load_state_dict(theirs)
        for group in optimizer.param_groups:
            group.update(lr=self.options.learning_rate, weight_decay=self.options.weight_decay)
        self.optimizer = optimizer
        torch.set_rng_state(state["torch_rng"])
        self.version, self.last_step = version, last_step

    async def export_weights(self, directory: Path) -> None:
        await run_in_thread(self._export, directory)

    def _export(self, directory: Path) -> None:
        self.model.save_pretrained(directory, safe_serialization=True)
        self.tokenizer.save_pretrained(directory)
