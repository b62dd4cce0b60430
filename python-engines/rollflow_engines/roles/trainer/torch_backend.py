"""The torch trainer: a Hugging Face causal LM on the device of option ``device`` (cpu, cuda), AdamW, micro-batches with gradient accumulation, grad clipping, a learning-rate
schedule over train steps (schedule.py).

One train step:

    advantages of the sequence-level estimators (once, from the rewards)  batch.prepare_batch
    step-start pass, no grad, before any update (only what the step needs):
        log π_prox and the value head's V_old under the current weights,
        log π_ref under the frozen initial weights                          _step_start_pass
    token advantages (broadcast, or GAE on V_old; whitened if asked)        batch.fill_advantages
    for epoch in ppo_epochs:
        for mini-batch of micro_batch_size × gradient_accumulation_steps samples:
            for micro-batch (split into samples of similar length, widths.py):
                log π_θ, entropy (and V) of each response token  (softmax(logits / temperature))
                loss = objective(POLICY_LOSSES[pg_variant], inputs)     pg + KL − entropy + value terms
                backward(loss · weight_micro / weight_mini)   exact aggregate over the mini-batch
            clip grad norm; AdamW step (skipped if the norm is not finite)

log π_old is the sample's ``old_logprobs`` (the inference server's), so the
PPO ratio of the first epoch measures the train/infer mismatch plus the
staleness of the sample; it is never taken to be 1.

The value head (for adv_estimator gae) is a linear layer on the last hidden
state, sharing the trunk, zero-initialised so V starts at 0; it has its own
AdamW so checkpoints without it still load. The KL reference is the initial
weights, loaded once on the first step that uses it and frozen.

LoRA (lora_rank > 0, models/lora.py): the base weights are frozen and the
optimizer holds only the adapter (and the value head); the KL reference is the
same model with its adapter disabled, so no second copy is loaded. A weight
sync exports the adapter alone; a checkpoint's HF export is a merged copy.

Devices: the model, value head, reference and optimizer state live on ``device``; the batch's own
tensors (masks, rewards, advantages, step-start logprobs) stay on the CPU, where the advantage code
runs; a micro-batch's tokens go to the device for each forward pass and the objective's inputs follow
the logprobs there (MicroInputs.loss_inputs).

Dropout stays off (the model is kept in eval mode): the logprobs a train step
computes equal /logprobs' and the inference server's for the same weights.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path

import torch
from torch import Tensor

from ...algorithms import LOSS_AGGREGATIONS, objective
from ...durable import write_through
from ...errors import RequestError
from ...models import load_model, resolve_model_path
from ...models.lora import LoraSpec, merged_copy, wrap
from ...widths import width_groups
from .backend import MetricAverager, RecordedStep, TrainerBackend, run_in_thread
from ...models.sequences import MicroBatch, pad_sequences, response_hidden, response_logprobs_and_entropy
from .batch import MicroInputs, PreparedBatch, StepNeeds, batch_metrics, fill_advantages, micro_inputs
from .contracts import TokenSequence, TrainStepRequest, TrainStepResponse
from .schedule import scheduled_lr, set_lr

STATE_FILE = "trainer_state.pt"


@dataclass
class Forward:
    logprobs: Tensor  # [b, T] log π of each response token
    entropy: Tensor | None  # [b, T] entropy of each response position's distribution
    values: Tensor | None  # [b, T] value head


class TorchTrainer(TrainerBackend):
    name = "torch"

    def __init__(self, options):
        super().__init__(options)
        if options.torch_threads:
            torch.set_num_threads(options.torch_threads)
        self.device = torch.device(options.device)
        self.model, self.tokenizer = load_model(options.model, options.model_seed, options.model_cache_dir, options.dtype, options.device)
        self.lora = LoraSpec.from_options(options, resolve_model_path(options.model, options.model_seed, options.model_cache_dir))
        if self.lora:
            self.model = wrap(self.model, self.lora, options.seed)
        self.model.eval()  # no dropout: see the module docstring
        tok = self.tokenizer
        self.pad_id = next(i for i in (tok.pad_token_id, tok.eos_token_id, 0) if i is not None)
        self.vocab_size = self.model.get_input_embeddings().num_embeddings
        self.optimizer = self._new_optimizer(self._trainable())
        self.value_head = self._zero_value_head()
        self.value_optimizer = self._new_optimizer(self.value_head.parameters())
        self.reference: torch.nn.Module | None = None  # the frozen initial weights, loaded when a step needs them
        # Seeded for anything random a step may do (dropout in other models, shuffling); saved by /save.
        torch.manual_seed(options.seed)

    def _zero_value_head(self) -> torch.nn.Linear:
        """V(s) = w·h(s) + b with w = b = 0; built without touching the RNG."""
        head = torch.nn.utils.skip_init(torch.nn.Linear, self.model.config.hidden_size, 1)
        with torch.no_grad():
            head.weight.zero_()
            head.bias.zero_()
        return head.to(self.device)

    def _trainable(self) -> list[torch.nn.Parameter]:
        """What the policy optimizer updates: every weight, or with LoRA the adapter's only."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def _new_optimizer(self, params) -> torch.optim.AdamW:
        o = self.options
        return torch.optim.AdamW(params, lr=o.learning_rate, weight_decay=o.weight_decay,
                                 betas=(o.adam_beta1, o.adam_beta2), eps=o.adam_eps)

    def describe(self) -> dict:
        return {**super().describe(), "model": self.options.model, "model_seed": self.options.model_seed,
                "dtype": self.options.dtype, "device": self.options.device, "lora": self.lora.describe() if self.lora else None}

    # ---- forward

    def _forward(self, mb: MicroBatch, temperature: float, *, values: bool = False, entropy: bool = True,
                 entropy_grad: bool = False, model: torch.nn.Module | None = None) -> Forward:
        mb = MicroBatch(**{f.name: getattr(mb, f.name).to(self.device, non_blocking=True) for f in fields(mb)})
        out = (model or self.model)(input_ids=mb.input_ids, attention_mask=mb.attention_mask, position_ids=mb.position_ids,
                                    use_cache=False, output_hidden_states=values)
        logprobs, h = response_logprobs_and_entropy(out.logits, mb, temperature, entropy=entropy)
        if h is not None and not entropy_grad:
            h = h.detach()  # a metric only: no graph through the B·T·V softmax
        v = None
        if values:
            v = self.value_head(response_hidden(out.hidden_states[-1], mb).float()).squeeze(-1)
            v = torch.where(mb.response_mask > 0, v, torch.zeros_like(v))
        return Forward(logprobs, h, v)

    @contextlib.contextmanager
    def _reference_model(self) -> Iterator[torch.nn.Module]:
        """π_ref, the initial weights: with LoRA the base model (adapter disabled), else a frozen copy loaded once."""
        if self.lora:
            with self.model.disable_adapter():
                yield self.model
            return
        if self.reference is None:
            o = self.options
            self.reference, _ = load_model(o.model, o.model_seed, o.model_cache_dir, o.dtype, o.device)
            self.reference.eval().requires_grad_(False)
        yield self.reference

    @torch.no_grad()
    def _step_start_pass(self, micro: list[MicroInputs], temperature: float, needs: StepNeeds) -> None:
        """The proximal pass: before the step's first optimizer update, log π_prox and V_old under
        the weights as they are now, and log π_ref under the initial weights; only what ``needs`` asks.
        The results join the batch's other tensors on the CPU."""
        cpu = lambda t: t.cpu() if t is not None else None  # noqa: E731
        for m in micro:
            if needs.prox_logprobs or needs.values:
                f = self._forward(m.tokens, temperature, values=needs.values, entropy=False)
                m.prox_logprobs = cpu(f.logprobs) if needs.prox_logprobs else None
                m.old_values = cpu(f.values)
            if needs.ref_logprobs:
                with self._reference_model() as reference:
                    m.ref_logprobs = cpu(self._forward(m.tokens, temperature, entropy=False, model=reference).logprobs)

    # ---- train step

    async def train_step(self, req: TrainStepRequest, batch: PreparedBatch) -> TrainStepResponse:
        return await run_in_thread(self._train_step, req, batch)

    def _train_step(self, req: TrainStepRequest, batch: PreparedBatch) -> TrainStepResponse:
        started = time.perf_counter()
        o = self.options
        agg = LOSS_AGGREGATIONS[req.loss_agg_mode]
        n = len(batch.samples)
        per_update = o.micro_batch_size * o.gradient_accumulation_steps if o.gradient_accumulation_steps else n
        minis = [list(range(start, min(start + per_update, n))) for start in range(0, n, per_update)]
        inputs = [[micro_inputs(batch, part, self.pad_id, o.padding_side)
                   for j in range(0, len(mini), o.micro_batch_size) for part in self._width_parts(batch, mini[j:j + o.micro_batch_size])]
                  for mini in minis]
        every_micro = [m for mini in inputs for m in mini]
        set_lr((self.optimizer, self.value_optimizer), scheduled_lr(o, req.step))
        self._step_start_pass(every_micro, req.temperature, batch.needs)
        fill_advantages(batch, every_micro)
        params = self._trainable() + list(self.value_head.parameters())
        entropy_grad = batch.loss_params.entropy_loss_coef > 0
        averaged, grad_norms, updates, skipped = MetricAverager(), [], 0, 0

        for _epoch in range(req.ppo_epochs):
            for mini in inputs:
                weights = [agg.weight(m.mask) for m in mini]
                total = sum(weights)
                if total == 0:
                    continue  # every token of this mini-batch is masked out
                self.optimizer.zero_grad(set_to_none=True)
                self.value_optimizer.zero_grad(set_to_none=True)
                for m, w in zip(mini, weights):
                    f = self._forward(m.tokens, req.temperature, values=batch.needs.values, entropy_grad=entropy_grad)
                    loss, loss_metrics = objective(batch.policy_loss, m.loss_inputs(f.logprobs, f.entropy, f.values), batch.loss_params)
                    (loss * (w / total)).backward()
                    averaged.add(loss_metrics, w)
                    self.micro_batches += 1
                norm = torch.nn.utils.clip_grad_norm_(params, o.max_grad_norm)
                grad_norms.append(float(norm))
                if torch.isfinite(norm):
                    self.optimizer.step()
                    self.value_optimizer.step()
                    updates += 1
                else:
                    skipped += 1
        self.optimizer.zero_grad(set_to_none=True)
        self.value_optimizer.zero_grad(set_to_none=True)

        metrics = batch_metrics(batch, self.version, every_micro)
        metrics.update(averaged.means())  # losses/total is objective()'s total, the number differentiated
        metrics["grad_norm"] = sum(grad_norms) / len(grad_norms) if grad_norms else 0.0
        metrics["actor/optimizer_steps"] = float(updates)
        metrics["actor/skipped_steps"] = float(skipped)
        metrics["actor/lr"] = float(self.optimizer.param_groups[0]["lr"])
        metrics["timing/train_s"] = time.perf_counter() - started
        return self.commit(req, batch, metrics)

    @staticmethod
    def _width_parts(batch: PreparedBatch, micro: list[int]) -> list[list[int]]:
        """A micro-batch split into samples of similar length (widths.py): each part is padded to its own
        longest only. The gradient is the same (the aggregation weights make accumulation exact); a part is
        never larger than the micro-batch, so memory stays within per_device_train_batch_size."""
        lengths = [len(batch.samples[i].prompt_ids) + len(batch.samples[i].response_ids) for i in micro]
        return [[micro[k] for k in group] for group in width_groups(lengths)]

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
            logprobs = self._forward(mb, temperature, entropy=False).logprobs
            out.extend(row[:len(s.response_ids)].tolist() for row, s in zip(logprobs, chunk))
        return out

    # ---- checkpoints and export

    async def save_state(self, directory: Path) -> None:
        await run_in_thread(self._save, directory)

    def _save(self, directory: Path) -> None:
        # Through write_through: torch.save reports a full disk as a RuntimeError of its own.
        write_through(directory / STATE_FILE, lambda f: torch.save({
            "model": self._weights_state(),
            "lora": self.lora.describe() if self.lora else None,
            "optimizer": self.optimizer.state_dict(),
            "value_head": self.value_head.state_dict(),
            "value_optimizer": self.value_optimizer.state_dict(),
            "torch_rng": torch.get_rng_state(),
        }, f))

    def _weights_state(self) -> dict[str, torch.Tensor]:
        """What a checkpoint keeps of the policy: every weight, or with LoRA the adapter only (the base never changes)."""
        state = self.model.state_dict()
        if not self.lora:
            return state
        trainable = {name for name, p in self.model.named_parameters() if p.requires_grad}
        return {k: v for k, v in state.items() if k in trainable}

    def _check_lora_fits(self, theirs: dict | None, directory: Path) -> None:
        """A LoRA checkpoint loads only into a trainer with the same LoRA settings; a full one only into a full one."""
        ours = self.lora.describe() if self.lora else None
        if theirs == ours:
            return
        said = lambda lora: "full fine-tuning (lora_rank 0)" if lora is None else (  # noqa: E731
            f"LoRA r={lora.get('r')} lora_alpha={lora.get('lora_alpha')} target_modules={lora.get('target_modules')} base={lora.get('base')}")
        raise RequestError("path", f"checkpoint was written by a trainer with {said(theirs)}; this trainer runs {said(ours)}",
                           str(directory))

    async def load_state(self, directory: Path, version: int, last_step: RecordedStep | None) -> None:
        await run_in_thread(self._load, directory, version, last_step)

    def _load(self, directory: Path, version: int, last_step: RecordedStep | None) -> None:
        file = directory / STATE_FILE
        try:
            state = torch.load(file, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - any unreadable file is the caller's bad path
            raise RequestError("path", f"cannot read {file}: {e}", str(directory)) from e
        if isinstance(state, dict):
            self._check_lora_fits(state.get("lora"), directory)
        ours = self._weights_state()
        theirs = state.get("model", {}) if isinstance(state, dict) else {}
        wrong = sorted(set(ours) ^ set(theirs)) or [k for k in ours if ours[k].shape != theirs[k].shape]
        if wrong:
            raise RequestError("path", f"checkpoint does not fit this model ({self.options.model}); first mismatch: {wrong[0]}", str(directory))
        if not isinstance(state.get("torch_rng"), torch.Tensor):
            raise RequestError("path", "checkpoint has no RNG state", str(directory))
        optimizer = self._new_optimizer(self._trainable())
        value_head = self._zero_value_head()
        value_optimizer = self._new_optimizer(value_head.parameters())
        try:
            optimizer.load_state_dict(state["optimizer"])
            if "value_head" in state:  # checkpoints from before the value head have none: it stays at zero
                value_head.load_state_dict(state["value_head"])
                value_optimizer.load_state_dict(state["value_optimizer"])
        except (KeyError, ValueError, RuntimeError) as e:
            raise RequestError("path", f"checkpoint optimizer or value-head state does not fit this model: {e}", str(directory)) from e
        # Validated: now change state. The current options' hyperparameters win over the saved ones.
        self.model.load_state_dict(theirs, strict=not self.lora)  # LoRA: the adapter only (keys checked above)
        for opt in (optimizer, value_optimizer):
            for group in opt.param_groups:
                group.update(lr=self.options.learning_rate, weight_decay=self.options.weight_decay)
        self.optimizer, self.value_head, self.value_optimizer = optimizer, value_head, value_optimizer
        torch.set_rng_state(state["torch_rng"])
        self.version, self.last_step = version, last_step

    async def export_weights(self, directory: Path) -> None:
        await run_in_thread(self._export, directory)

    def _export(self, directory: Path) -> None:
        """For a weight sync: the whole model and tokenizer, or with LoRA the adapter alone (models/lora.py)."""
        self.model.save_pretrained(directory, safe_serialization=True)
        if not self.lora:
            self.tokenizer.save_pretrained(directory)

    async def export_hf(self, directory: Path, adapter_directory: Path) -> None:
        await run_in_thread(self._export_hf, directory, adapter_directory)

    def _export_hf(self, directory: Path, adapter_directory: Path) -> None:
        """The policy as one from_pretrained-loadable directory; with LoRA a merged copy, and the adapter beside it."""
        if not self.lora:
            return self._export(directory)
        merged_copy(self.model).save_pretrained(directory, safe_serialization=True)
        self.tokenizer.save_pretrained(directory)
        adapter_directory.mkdir()
        self._export(adapter_directory)
