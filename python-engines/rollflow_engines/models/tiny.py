"""Tiny causal LMs built from code: no download, deterministic by seed.

``tiny:<preset>`` names a small Llama-architecture model (the ``qwen2-*`` presets: Qwen2
architecture) with a character-level tokenizer (digits, letters, punctuation, space, newline); ``tiny:<preset>+warm:<name>``
the same after a short supervised warm-start (models/warmstart.py). It is built once into
a cache directory with ``save_pretrained`` and from then on loads exactly like
any Hugging Face model directory, so the torch backends have one loading path
for tiny and real models.
"""
from __future__ import annotations

import os
import string
from dataclasses import dataclass
from pathlib import Path

# With tools (apply_chat_template(tools=...)) a system turn lists them and asks for <tool_call> JSON, in the words
# of Qwen2.5's template, before the conversation (a system message of the conversation leads that turn, as in
# Qwen2.5's). Hugging Face renders with trim_blocks, so a newline right after a block tag is written as {{ '\n' }}.
# A tool message (the result of a call) renders as Qwen2.5's does: inside a user turn, as <tool_response>, a run of them
# sharing one turn. Without tools or tool messages it renders exactly as the template before tools did, so no existing
# prompt changes.
TOOLS_PREAMBLE = (
    "{% if tools %}<|system|>{% if messages and messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}\n\n{% endif %}"
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
    "{% for tool in tools %}{{ '\\n' }}{{ tool | tojson }}{% endfor %}{{ '\\n' }}</tools>\n\n"
    "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n"
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n{% endif %}'
)
TOOL_MESSAGE_BRANCH = (
    "{% if m['role'] == 'tool' %}"
    "{% if loop.first or messages[loop.index0 - 1]['role'] != 'tool' %}<|user|>{% endif %}"
    "{{ '\\n' }}<tool_response>{{ '\\n' }}{{ m['content'] }}{{ '\\n' }}</tool_response>"
    "{% if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}{{ '\\n' }}{% endif %}"
)
CHAT_TEMPLATE = (
    TOOLS_PREAMBLE
    + "{% for m in messages %}" + TOOL_MESSAGE_BRANCH
    + "{% elif not (tools and loop.first and m['role'] == 'system') %}"
    "<|{{ m['role'] }}|>{{ m['content'] }}\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SPECIAL_TOKENS = ["<pad>", "<bos>", "<eos>", "<|system|>", "<|user|>", "<|assistant|>"]
CHARACTERS = list(string.digits + string.ascii_letters + string.punctuation + " \n")


@dataclass(frozen=True)
class TinyPreset:
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    max_position_embeddings: int = 512
    architecture: str = "llama"  # llama or qwen2 (q/k/v projections with biases, as Qwen2 has)
    # Rows of the embedding and output layers; None: the tokenizer's size. Larger pads the vocabulary as
    # real checkpoints do (Qwen2.5's config has 151936 rows for 151665 tokens): ids past the tokenizer decode to nothing.
    vocab_size: int | None = None


TINY_PRESETS: dict[str, TinyPreset] = {
    # ~0.1M parameters: fast enough for unit tests on 2 cores.
    "default": TinyPreset(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2),
    # ~1M parameters: for learning runs.
    "small": TinyPreset(hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2),
    # Qwen2 architecture, ~0.3M parameters: the GPU check's CPU run (bench/gpu/check.py).
    "qwen2-small": TinyPreset(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                              num_key_value_heads=2, architecture="qwen2"),
    # qwen2-small with a 16384-position context: whole agentic episodes (an SWE issue, the tools, 30 turns) on CPU,
    # for end-to-end runs of full-length configs such as examples/swe-real.yaml. Positions are rotary: no more weights.
    "qwen2-long": TinyPreset(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, max_position_embeddings=16384, architecture="qwen2"),
    # Qwen2.5-0.5B's shapes (hidden 896, 24 layers, 14 heads, 2 KV heads, intermediate 4864, vocabulary 151936,
    # tied embeddings): ~494M parameters with random weights, for the GPU check. Its fp32 build is ~2 GB.
    "qwen2-0.5b": TinyPreset(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                             num_key_value_heads=2, max_position_embeddings=2048, architecture="qwen2", vocab_size=151936),
}


def build_tokenizer():
    """A character-level fast tokenizer with a chat template; ids are stable across builds."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + CHARACTERS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.Split(pattern="", behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>",
                                  additional_special_tokens=SPECIAL_TOKENS[3:])
    tok.chat_template = CHAT_TEMPLATE
    return tok


def build_tiny_model(preset: str, seed: int, out_dir: str | os.PathLike) -> Path:
    """Builds preset ``preset`` with weights drawn from ``seed`` and saves model + tokenizer to ``out_dir``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    if preset not in TINY_PRESETS:
        raise ValueError(f"unknown tiny preset {preset!r}; expected one of {', '.join(TINY_PRESETS)}")
    p = TINY_PRESETS[preset]
    tokenizer = build_tokenizer()
    config_class, model_class = (Qwen2Config, Qwen2ForCausalLM) if p.architecture == "qwen2" else (LlamaConfig, LlamaForCausalLM)
    config = config_class(
        vocab_size=p.vocab_size or len(tokenizer), hidden_size=p.hidden_size, intermediate_size=p.intermediate_size,
        num_hidden_layers=p.num_hidden_layers, num_attention_heads=p.num_attention_heads,
        num_key_value_heads=p.num_key_value_heads, max_position_embeddings=p.max_position_embeddings,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
    )
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = model_class(config)
    finally:
        torch.random.set_rng_state(generator_state)
    out = Path(out_dir)
    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    tmp.rename(out)  # atomic: a concurrent reader never sees half a model
    return out


REPO_ROOT = Path(__file__).resolve().parents[3]  # where .cache lives (a checkout's root)


def default_cache_dir() -> Path:
    return Path(os.environ.get("ROLLFLOW_MODEL_CACHE", REPO_ROOT / ".cache" / "models"))


def tiny_model_dir(preset: str, seed: int = 0, cache_dir: str | os.PathLike | None = None) -> Path:
    """The directory of ``tiny:<preset>`` (seed ``seed``), built on first use."""
    target = Path(cache_dir or default_cache_dir()) / f"tiny-{preset}-seed{seed}"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            build_tiny_model(preset, seed, target)
        except OSError:
            if not target.exists():  # another process won the rename race: fine; anything else is real
                raise
    return target


def load_pretrained(path: str | os.PathLike, dtype: str = "fp32", device: str = "cpu"):
    """(model, tokenizer) of a Hugging Face model directory, on ``device`` (cpu, cuda, cuda:<i>) with parameters in
    ``dtype`` (policy_options.DTYPE_NAMES), from local files only."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .policy_options import torch_dtype

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch_dtype(dtype))
    model.to(device)
    model.eval()
    return model, tokenizer
