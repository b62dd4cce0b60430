"""The torch backend: a Hugging Face causal LM on CPU or a GPU (option device) behind the step-wise scheduler.

Each decode step recomputes the full forward pass of every running sequence
(prompt + tokens so far), left-padded with an attention mask and explicit
position ids, without a KV cache. That costs O(length) per token, which is
fine for the tiny models this backend exists for (tests, CPU learning runs),
and keeps continuous batching trivial: a sequence joins or leaves the batch
between steps with no cache to splice. Sequences of very different lengths
go through separate forward passes (widths.py), so padding stays bounded. The
forward pass runs in a worker thread so the event loop keeps answering HTTP
during a step.

Sampling per sequence: temperature 0 is greedy; otherwise softmax(logits/T)
truncated to the top_k most likely tokens, then to the top_p nucleus. The draw for the token at
absolute position p (prompt + tokens so far) uses a torch.Generator seeded from (request seed,
sample index, p), or from the server seed when the request has none. Keying the draw on the
position, not on how many draws came before, means a continuation (the prompt plus a cut
generation's tokens, sent with the same seed after an abort, a lost server or a retried activity)
draws what the uncut generation would have. The last-position logits come back to the CPU in float32
and every draw happens there, whatever the device. The reported logprob follows the
convention in contracts.py: softmax(logits/T) before top-k and top-p, T=1 when greedy.

Option batch_invariant runs each sequence's forward pass alone: batched CPU kernels sum in an
order that depends on the batch's shape (its rows and padding), so a sequence's logits differ in
the last bits with what it shares a step with; alone, they are a function of its own tokens and
the weights (docs/exactly-once.md).

Option kv_cache keeps each running sequence's key/value cache between steps (a forward pass per
sequence, fed only the tokens its cache lacks: the prompt at its first step, then one token).
Caches are dropped at a weight update (the next step recomputes the whole sequence under the new
weights) and go with the sequence when it ends.

With lora_rank > 0 the model carries a LoRA adapter (models/lora.py) that starts
as a no-op; a weight update replaces the adapter's tensors and never touches
the base weights.
"""
from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ...errors import RequestError
from ...exports import HF_EXPORTERS, ServedModel
from ...models import load_model, resolve_model_path
from ...models.lora import LoraSpec, load_adapter, wrap
from ...widths import width_groups
from ...models.chat import hf_chat_continuation, hf_chat_prompt
from .engine import SamplingParams, Seq, derive_seed, hf_decode
from .stepped import SteppedEngine
from .metrics import InferenceMetrics
from .options import Options


def sample_token(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator) -> tuple[int, float]:
    """(token, logprob) from one row of last-position logits."""
    temperature = params.temperature if params.temperature > 0 else 1.0
    logprobs = torch.log_softmax(logits / temperature, dim=-1)
    if params.temperature == 0:
        token = int(torch.argmax(logits))
    else:
        probs = logprobs.exp()
        if 0 < params.top_k < probs.shape[-1]:
            # Only the k most likely tokens may be drawn (ties at the k-th value are kept).
            probs = torch.where(probs >= torch.topk(probs, params.top_k).values[-1], probs, torch.zeros_like(probs))
            probs = probs / probs.sum()
        if params.top_p < 1.0:
            sorted_probs, order = torch.sort(probs, descending=True)
            # Keep the smallest prefix whose mass reaches top_p (the top token always stays).
            outside = torch.cumsum(sorted_probs, dim=-1) - sorted_probs >= params.top_p
            sorted_probs[outside] = 0.0
            probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs)
        token = int(torch.multinomial(probs, 1, generator=generator))
    return token, float(logprobs[token])


@dataclass
class Decoding:
    """A running sequence's torch state: the key its draws derive from (module docstring) and, with kv_cache, its cache,
    which holds the first ``cached`` ids of prompt + tokens as computed under weights ``epoch``."""

    key: int
    cache: Any = None
    cached: int = 0
    epoch: int = 0


class TorchEngine(SteppedEngine):
    backend_name = "torch"

    def __init__(self, options: Options, metrics: InferenceMetrics):
        super().__init__(options.max_batch, metrics)
        if options.torch_threads:
            torch.set_num_threads(options.torch_threads)
        self.device = torch.device(options.device)
        self.model, self.tokenizer = load_model(options.model, options.model_seed, dtype=options.dtype, device=options.device)
        self.model_name = options.served_model_name or options.model
        config = self.model.config
        self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])
        self.lora = LoraSpec.from_options(options, resolve_model_path(options.model, options.model_seed))
        if self.lora:
            self.model = wrap(self.model, self.lora, options.seed)
        self.served = ServedModel(self.backend_name, HF_EXPORTERS, options.model, self.vocab_size,
                                  self.lora.describe() if self.lora else None)
        self.max_context: int | None = getattr(config, "max_position_embeddings", None)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        # End-of-sequence ids may be declared by the tokenizer, the config or the generation config (as an int or a list).
        eos: set[int] = set()
        generation_config = getattr(self.model, "generation_config", None)
        for declared in (self.tokenizer.eos_token_id, getattr(config, "eos_token_id", None),
                         getattr(generation_config, "eos_token_id", None)):
            eos.update(declared if isinstance(declared, list) else [] if declared is None else [declared])
        self.eos_token_ids = frozenset(eos)
        self._seeds = random.Random(options.seed)  # for requests without a seed
        self.batch_invariant = options.batch_invariant
        self.kv_cache = options.kv_cache
        self._weights_epoch = 0  # counts weight loads: a cache from an older epoch is dropped

    # --- requests ------------------------------------------------------

    def check_request(self, prompt: list[int], params: SamplingParams) -> None:
        if params.sim_response_length is not None:
            raise RequestError("sim_response_length", "only the sim backend honours it", params.sim_response_length)
        for field, ids in (("prompt", prompt), ("stop_token_ids", params.stop_token_ids)):
            bad = next((t for t in ids if t >= self.vocab_size), None)
            if bad is not None:
                raise RequestError(field, f"token id {bad} is outside the vocabulary (size {self.vocab_size})", bad)
        if self.max_context is not None and len(prompt) + params.max_tokens > self.max_context:
            raise RequestError("max_tokens", f"prompt ({len(prompt)} tokens) + max_tokens ({params.max_tokens}) "
                               f"exceeds the model's context of {self.max_context} tokens", params.max_tokens)

    def chat_prompt(self, messages: list[dict[str, str]]) -> list[int]:
        if not getattr(self.tokenizer, "chat_template", None):
            raise RequestError("messages", "this model's tokenizer has no chat template; use /v1/completions")
        return hf_chat_prompt(self.tokenizer, messages)

    def chat_continuation(self, history: list[dict[str, str]], messages: list[dict[str, str]]) -> list[int]:
        return hf_chat_continuation(self.tokenizer, history, messages)

    def decode(self, token_ids: list[int]) -> str | None:
        return hf_decode(self.tokenizer, token_ids, self.metrics)

    # --- scheduler hooks -----------------------------------------------

    def _admit(self, seq: Seq) -> None:
        seed = seq.params.seed if seq.params.seed is not None else self._seeds.getrandbits(62)
        seq.state = Decoding(derive_seed(seed, seq.index))  # each draw adds its position to the key (module docstring)

    async def _step(self, batch: list[Seq]) -> list[tuple[int, float]]:
        inputs = [seq.prompt + seq.tokens for seq in batch]  # snapshot on the loop thread
        return await asyncio.to_thread(self._forward_and_sample, batch, inputs)

    @torch.inference_mode()
    def _forward_and_sample(self, batch: list[Seq], inputs: list[list[int]]) -> list[tuple[int, float]]:
        """One token for each sequence: a forward pass per width group (widths.py), or per sequence
        with batch_invariant; each draw keyed on the sequence and its position, so the grouping changes no draw."""
        outputs: list[tuple[int, float]] = [(0, 0.0)] * len(batch)
        alone = self.batch_invariant or self.kv_cache  # a pass per sequence
        groups = [[r] for r in range(len(inputs))] if alone else width_groups([len(ids) for ids in inputs])
        for rows in groups:
            logits = self._cached_last_logits(batch[rows[0]].state, inputs[rows[0]]) if self.kv_cache else self._last_logits([inputs[r] for r in rows])
            for i, r in enumerate(rows):
                generator = torch.Generator()
                generator.manual_seed(derive_seed(batch[r].state.key, len(inputs[r])))
                outputs[r] = sample_token(logits[i], batch[r].params, generator)
        return outputs

    def _cached_last_logits(self, decoding: Decoding, ids: list[int]) -> torch.Tensor:
        """[1, vocab] float32 logits on the CPU at the last position of ``ids``, feeding the model only what the sequence's
        cache lacks (all of ``ids`` when it has none, or none valid under the current weights)."""
        if decoding.epoch != self._weights_epoch or decoding.cached >= len(ids):
            decoding.cache, decoding.cached, decoding.epoch = None, 0, self._weights_epoch
        new = torch.tensor([ids[decoding.cached:]], dtype=torch.long, device=self.device)
        positions = torch.arange(decoding.cached, len(ids), dtype=torch.long, device=self.device).unsqueeze(0)
        out = self.model(input_ids=new, position_ids=positions, past_key_values=decoding.cache, use_cache=True, logits_to_keep=1)
        decoding.cache, decoding.cached = out.past_key_values, len(ids)
        return out.logits[:, -1, :].float().cpu()

    def _last_logits(self, inputs: list[list[int]]) -> torch.Tensor:
        """[rows, vocab] float32 logits on the CPU at each sequence's last position, the rows left-padded to the longest."""
        width = max(len(ids) for ids in inputs)
        input_ids = torch.full((len(inputs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(inputs), width), dtype=torch.long)
        for row, ids in enumerate(inputs):
            input_ids[row, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
            mask[row, width - len(ids):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        on = lambda t: t.to(self.device, non_blocking=True)  # noqa: E731
        out = self.model(input_ids=on(input_ids), attention_mask=on(mask), position_ids=on(positions),
                         use_cache=False, logits_to_keep=1)
        return out.logits[:, -1, :].float().cpu()

    async def _load_weights(self, path: Path) -> None:
        await asyncio.to_thread(self._load_weights_sync, path)

    def _load_weights_sync(self, path: Path) -> None:
        """Loads *.safetensors from ``path`` into the model in place (with LoRA: the adapter's), all checks before any copy."""
        if self.lora:
            load_adapter(self.model, path)
            self._weights_epoch += 1
            return
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        files = sorted(path.glob("*.safetensors")) if path.is_dir() else []
        if not files:
            raise RequestError("path", f"{path} holds no *.safetensors files (write them with save_pretrained)", str(path))
        incoming: dict[str, torch.Tensor] = {}
        try:
            for f in files:
                incoming.update(load_file(f))
        except (SafetensorError, OSError) as e:
            raise RequestError("path", f"cannot read weights: {e}", str(path)) from e
        current = self.model.state_dict()
        unexpected = sorted(set(incoming) - set(current))
        if unexpected:
            raise RequestError("path", f"weights do not fit this model: unexpected tensors {unexpected[:5]}", str(path))
        for name, tensor in incoming.items():
            if tensor.shape != current[name].shape:
                raise RequestError("path", f"tensor {name} has shape {list(tensor.shape)}, the model "
                                   f"expects {list(current[name].shape)}", str(path))
        # A missing tensor is fine only if it shares storage with one we load (tied embeddings).
        loaded_storage = {current[n].data_ptr() for n in incoming}
        missing = sorted(n for n in set(current) - set(incoming) if current[n].data_ptr() not in loaded_storage)
        if missing:
            raise RequestError("path", f"weights do not fit this model: missing tensors {missing[:5]}", str(path))
        self.model.load_state_dict(incoming, strict=False)
        self._weights_epoch += 1
