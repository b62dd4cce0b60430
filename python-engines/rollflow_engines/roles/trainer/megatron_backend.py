"""The megatron trainer: Megatron-Core training of a Hugging Face model on GPUs.

NOT RUN HERE. This module is written against Megatron-Core's public API
(parallel_state, GPTModel via Megatron-Bridge's AutoBridge, the pipeline
schedules' get_forward_backward_func, get_megatron_optimizer,
vocab_parallel_cross_entropy, dist_checkpointing) and has never executed: the
machines this project is developed on have no GPU and no megatron packages.
Expect to debug it on the first GPU machine. Known limits, by design for now:

- one process (world size 1): tensor/pipeline parallel sizes > 1 need every
  rank to run the same step, i.e. rank 0 broadcasting each HTTP request to
  worker ranks — not written yet; start-up refuses a world size > 1;
- right padding only (Megatron's causal mask + a key-padding mask);
- no value head and no KL reference model yet: adv_estimator gae and
  use_kl_loss are refused with a 400 naming the field;
- the entropy is taken from the full-vocabulary logits, right only while the
  tensor-parallel size is 1 (a vocab-parallel entropy comes with tp > 1).

Same step structure, algorithms (``objective`` over ``POLICY_LOSSES``, the
step-start proximal pass) and logprob convention as the torch backend (see
torch_backend.py and contracts.py); only the model plumbing differs.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import torch
from megatron.bridge import AutoBridge  # HF <-> Megatron-Core weight conversion
from megatron.core import dist_checkpointing, parallel_state
from megatron.core.distributed import DistributedDataParallelConfig, finalize_model_grads
from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
from megatron.core.pipeline_parallel import get_forward_backward_func
from megatron.core.tensor_parallel import model_parallel_cuda_manual_seed, vocab_parallel_cross_entropy
from transformers import AutoTokenizer

from ...algorithms import LOSS_AGGREGATIONS, objective
from ...errors import RequestError
from ...models import resolve_model_path
from .backend import MetricAverager, RecordedStep, TrainerBackend, run_in_thread
from ...models.sequences import MicroBatch, effective_temperature, pad_sequences, response_logprobs_and_entropy
from .batch import MicroInputs, PreparedBatch, batch_metrics, fill_advantages, micro_inputs
from .contracts import TokenSequence, TrainStepRequest, TrainStepResponse
from .schedule import scheduled_lr, set_lr


def _init_distributed(tp: int, pp: int, seed: int) -> None:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world != 1 or tp * pp != 1:
        raise RuntimeError("the megatron backend serves from one process for now (world size 1, tp = pp = 1); "
                           "multi-rank serving needs rank 0 to broadcast requests, which is not written yet")
    if not torch.distributed.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
        torch.distributed.init_process_group(backend="nccl", rank=0, world_size=1)
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    parallel_state.destroy_model_parallel()
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp)
    model_parallel_cuda_manual_seed(seed)


def _attention_mask(mb: MicroBatch) -> torch.Tensor:
    """[b, 1, s, s] boolean, True = masked: causal, and no attending to right padding."""
    s = mb.input_ids.shape[1]
    causal = torch.tril(torch.ones(s, s, dtype=torch.bool, device=mb.input_ids.device))
    allowed = causal[None, None] & mb.attention_mask.bool()[:, None, None, :]
    return ~allowed


class MegatronTrainer(TrainerBackend):
    name = "megatron"

    def __init__(self, options):
        super().__init__(options)
        mo = options.megatron
        _init_distributed(mo.tensor_model_parallel_size, mo.pipeline_model_parallel_size, options.seed)
        path = resolve_model_path(options.model, options.model_seed, options.model_cache_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.pad_id = next(i for i in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id, 0) if i is not None)
        self.bridge = AutoBridge.from_hf_pretrained(str(path))
        provider = self.bridge.to_megatron_provider(load_weights=True)
        provider.tensor_model_parallel_size = mo.tensor_model_parallel_size
        provider.pipeline_model_parallel_size = mo.pipeline_model_parallel_size
        provider.bf16 = mo.bf16
        provider.params_dtype = torch.bfloat16 if mo.bf16 else torch.float32
        provider.attention_dropout = provider.hidden_dropout = 0.0  # logprobs must match inference
        provider.finalize()
        ddp = DistributedDataParallelConfig(grad_reduce_in_fp32=True, overlap_grad_reduce=False, use_distributed_optimizer=False)
        self.model = provider.provide_distributed_model(wrap_with_ddp=True, ddp_config=ddp)  # list of model chunks
        self.vocab_size = self.bridge.hf_pretrained.config.vocab_size
        self.optimizer = get_megatron_optimizer(OptimizerConfig(
            optimizer="adam", lr=options.learning_rate, weight_decay=options.weight_decay,
            adam_beta1=options.adam_beta1, adam_beta2=options.adam_beta2, adam_eps=options.adam_eps,
            clip_grad=options.max_grad_norm, bf16=mo.bf16, params_dtype=provider.params_dtype,
        ), self.model)

    def describe(self) -> dict:
        return {**super().describe(), "model": self.options.model, "model_seed": self.options.model_seed}

    # ---- one pass of the pipeline schedule over micro-batches

    def _run_schedule(self, micro: list[dict], seq_length: int, forward_only: bool, loss_of) -> list[dict]:
        """get_forward_backward_func over ``micro`` (dicts with "tokens", "index", "temperature");
        ``loss_of(item, logprobs, entropy)`` -> (loss, reported dict).

        Megatron divides each micro-batch loss by the number of micro-batches; callers
        pre-scale so the sum over micro-batches is the exact aggregate they want.
        """
        def forward_step(data_iterator, model):
            item = next(data_iterator)
            mb: MicroBatch = item["tokens"]
            logits = model(mb.input_ids.cuda(), mb.position_ids.cuda(), _attention_mask(mb).cuda())

            def loss_func(output: torch.Tensor):
                # log π(y) = −cross-entropy over the tensor-parallel vocabulary shards.
                temperature = effective_temperature(item["temperature"])
                token_lp = -vocab_parallel_cross_entropy(output[:, :-1].float() / temperature, mb.input_ids[:, 1:].cuda())
                index, rmask = mb.response_index.cuda(), mb.response_mask.cuda()
                logprobs = torch.where(rmask > 0, token_lp.gather(1, index), torch.zeros_like(rmask))
                entropy = None
                if item.get("entropy"):  # full vocabulary: tp = 1 (module docstring)
                    cuda_mb = MicroBatch(mb.input_ids.cuda(), mb.attention_mask.cuda(), mb.position_ids.cuda(), index, rmask)
                    entropy = response_logprobs_and_entropy(output, cuda_mb, item["temperature"])[1]
                    if not item.get("entropy_grad"):
                        entropy = entropy.detach()
                return loss_of(item, logprobs, entropy)

            return logits, loss_func

        for chunk in self.model:
            chunk.zero_grad_buffer()
        self.optimizer.zero_grad()
        return get_forward_backward_func()(
            forward_step_func=forward_step, data_iterator=iter(micro), model=self.model,
            num_microbatches=len(micro), seq_length=seq_length, micro_batch_size=max(len(i["index"]) for i in micro),
            forward_only=forward_only,
        )

    def _scored_logprobs(self, micro: list[dict], seq_length: int) -> list[torch.Tensor]:
        """log π of each micro-batch under the current weights, no gradient."""
        for m in self.model:
            m.eval()
        items = [{**item, "entropy": False} for item in micro]
        with torch.no_grad():
            reported = self._run_schedule(items, seq_length, True, lambda item, lp, _h: (lp.sum() * 0, {"logprobs": lp.cpu()}))
        return [rep["logprobs"] for rep in reported]

    # ---- train step

    async def train_step(self, req: TrainStepRequest, batch: PreparedBatch) -> TrainStepResponse:
        if batch.needs.values:
            raise RequestError("adv_estimator", f"{req.adv_estimator} needs a value head, which the megatron backend does not have yet", req.adv_estimator)
        if batch.needs.ref_logprobs:
            raise RequestError("use_kl_loss", "the megatron backend has no KL reference model yet", True)
        return await run_in_thread(self._train_step, req, batch)

    def _train_step(self, req: TrainStepRequest, batch: PreparedBatch) -> TrainStepResponse:
        started = time.perf_counter()
        o = self.options
        agg = LOSS_AGGREGATIONS[req.loss_agg_mode]
        n = len(batch.samples)
        seq_length = max(len(s.prompt_ids) + len(s.response_ids) for s in batch.samples)
        per_update = o.micro_batch_size * o.gradient_accumulation_steps if o.gradient_accumulation_steps else n
        minis = []
        for start in range(0, n, per_update):
            mini = list(range(start, min(start + per_update, n)))
            minis.append([self._micro(batch, mini[j:j + o.micro_batch_size], seq_length, req.temperature)
                          for j in range(0, len(mini), o.micro_batch_size)])
        every_item = [item for mini in minis for item in mini]
        if batch.needs.prox_logprobs:  # the proximal pass, before the step's first update
            for item, lp in zip(every_item, self._scored_logprobs(every_item, seq_length)):
                item["micro"].prox_logprobs = lp
        fill_advantages(batch, [item["micro"] for item in every_item])
        set_lr((self.optimizer,), scheduled_lr(o, req.step))
        for m in self.model:
            m.train()
        averaged, grad_norms, updates, skipped = MetricAverager(), [], 0, 0
        for _epoch in range(req.ppo_epochs):
            for micro in minis:
                weights = [agg.weight(i["micro"].mask) for i in micro]
                total = sum(weights)
                if total == 0:
                    continue
                for item, w in zip(micro, weights):
                    item["scale"] = w / total * len(micro)  # undo Megatron's 1/num_microbatches
                    item["entropy_grad"] = batch.loss_params.entropy_loss_coef > 0

                def loss_of(item, logprobs, entropy):
                    m: MicroInputs = item["micro"]
                    loss, metrics = objective(batch.policy_loss, m.loss_inputs(logprobs, entropy), batch.loss_params)
                    averaged.add(metrics, agg.weight(m.mask))
                    return loss * item["scale"], {}

                self._run_schedule(micro, seq_length, False, loss_of)
                finalize_model_grads(self.model)
                ok, norm, _zeros = self.optimizer.step()
                grad_norms.append(float(norm) if norm is not None else float("nan"))
                updates, skipped = updates + int(bool(ok)), skipped + int(not ok)
        metrics = batch_metrics(batch, self.version, [item["micro"] for item in every_item])
        metrics.update(averaged.means())
        metrics["grad_norm"] = sum(grad_norms) / len(grad_norms) if grad_norms else 0.0
        metrics["actor/optimizer_steps"], metrics["actor/skipped_steps"] = float(updates), float(skipped)
        metrics["actor/lr"] = float(self.optimizer.param_groups[0]["lr"])
        metrics["timing/train_s"] = time.perf_counter() - started
        return self.commit(req, batch, metrics)

    def _micro(self, batch: PreparedBatch, index: list[int], seq_length: int, temperature: float) -> dict:
        m = micro_inputs(batch, index, self.pad_id, "right", seq_length)
        return {"index": index, "tokens": m.tokens, "temperature": temperature, "micro": m, "entropy": True}

    # ---- logprobs

    async def logprobs(self, sequences: list[TokenSequence], temperature: float) -> list[list[float]]:
        return await run_in_thread(self._logprobs, sequences, temperature)

    def _logprobs(self, sequences: list[TokenSequence], temperature: float) -> list[list[float]]:
        seq_length = max(len(s.prompt_ids) + len(s.response_ids) for s in sequences)
        size = self.options.micro_batch_size
        micro = []
        for j in range(0, len(sequences), size):
            chunk = sequences[j:j + size]
            micro.append({"index": list(range(j, j + len(chunk))), "temperature": temperature,
                          "tokens": pad_sequences([(s.prompt_ids, s.response_ids) for s in chunk], self.pad_id, "right", seq_length)})
        out: list[list[float]] = []
        for item, logprobs in zip(micro, self._scored_logprobs(micro, seq_length)):
            out.extend(row[:len(sequences[i].response_ids)].tolist() for row, i in zip(logprobs, item["index"]))
        return out

    # ---- checkpoints and export

    async def save_state(self, directory: Path) -> None:
        await run_in_thread(self._save, directory)

    def _core_model(self):
        """The GPTModel inside the DDP (and, in bf16, Float16Module) wrappers."""
        module = self.model[0]
        while hasattr(module, "module"):
            module = module.module
        return module

    def _sharded_state(self, is_loading: bool) -> dict:
        model_state = self._core_model().sharded_state_dict(prefix="")
        return {"model": model_state, "optimizer": self.optimizer.sharded_state_dict(model_state, is_loading=is_loading)}

    def _save(self, directory: Path) -> None:
        dist_checkpointing.save(sharded_state_dict=self._sharded_state(False), checkpoint_dir=str(directory / "dist"))
        torch.save({"torch_rng": torch.get_rng_state(), "cuda_rng": torch.cuda.get_rng_state()}, directory / "rng.pt")

    async def load_state(self, directory: Path, version: int, last_step: RecordedStep | None) -> None:
        await run_in_thread(self._load, directory, version, last_step)

    def _load(self, directory: Path, version: int, last_step: RecordedStep | None) -> None:
        loaded = dist_checkpointing.load(sharded_state_dict=self._sharded_state(True), checkpoint_dir=str(directory / "dist"))
        self._core_model().load_state_dict(loaded["model"])
        self.optimizer.load_state_dict(loaded["optimizer"])
        rng = torch.load(directory / "rng.pt", weights_only=True)
        torch.set_rng_state(rng["torch_rng"])
        torch.cuda.set_rng_state(rng["cuda_rng"])
        self.version, self.last_step = version, last_step

    async def export_weights(self, directory: Path) -> None:
        await run_in_thread(self._export, directory)

    def _export(self, directory: Path) -> None:
        self.bridge.save_hf_pretrained(self.model, str(directory))
        self.tokenizer.save_pretrained(directory)


__all__ = ["MegatronTrainer"]
