"""Supervised warm-start of a tiny model: the output *format* of a task, not its solution.

A model built from code emits random characters, so an RL run on it would
spend its first hour discovering that replies are integers (or action names)
ending in <eos>. A warm-start is a short supervised run on synthetic
conversations made by the task's own env (same observations, same chat
template, same token layout as a rollout) whose replies have the right format
but, by design, mostly the wrong content:

- arithmetic: the reply is the answer to *another* random question of the
  same distribution (so the model learns the format and the marginal of the
  answers, nothing about the question), except for a ``correct_prob`` share
  of examples labelled with the right answer;
- frozen_lake: every reply is a uniformly random action, over whole random
  episodes, so the model starts as the random policy.

``tiny:<preset>+warm:<name>`` names preset ``<preset>`` (seed ``model_seed``)
after warm-start ``WARM_STARTS[<name>]``. The result is cached under a hash of
(preset, seed, spec), built once under a file lock and published by atomic
rename, so an inference server and a trainer started together load the same
weights and only one of them does the work. Prebuild with::

    python -m rollflow_engines.models.warmstart tiny:small+warm:add [--seed 0]
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

# Bump when example generation or the training loop changes meaning: old caches are then not reused.
FORMAT_VERSION = 1
SPEC_FILE = "warmstart.json"


@dataclass(frozen=True)
class WarmStart:
    """One warm-start recipe; every field enters the cache hash."""

    env: Literal["arithmetic", "frozen_lake", "swe_lite", "swe"]
    env_config: dict[str, Any] = field(default_factory=dict)  # the env's Config, as the run config gives it
    correct_prob: float = 0.0  # arithmetic: share of examples labelled with the right answer; swe_lite, swe: with the fix
    # arithmetic, the other examples: "other" labels them with the answer to another random question,
    # "offset" with the right answer + d, d uniform in [-offset_max, offset_max] without 0 (a near miss).
    wrong: Literal["other", "offset"] = "other"
    offset_max: int = 2
    answer_format: Literal["bare", "tagged"] = "bare"  # "19" or "<answer>19</answer>" (both parse)
    # Long-tailed response lengths: round(LogNormal(log median, sigma)) spaces in each reply, which
    # every env strips before parsing. None: no filler. After the answer ("end") the length cannot
    # change the answer; still, in the learning runs the synchronous run shortened the replies and
    # the α = 2 run lengthened them (bench/results/learning.md). "start" puts the filler first.
    filler_median: float | None = None
    filler_at: Literal["start", "end"] = "end"
    filler_sigma: float = 1.0
    filler_max: int = 400
    steps: int = 200
    batch_size: int = 32
    learning_rate: float = 3e-3
    data_seed: int = 0

    def key(self, preset: str, seed: int) -> str:
        payload = {"format_version": FORMAT_VERSION, "preset": preset, "seed": seed, "spec": asdict(self)}
        if self.env == "swe":  # its examples come from a dataset file, which `make swe-tasks` may rewrite
            from .warmstart_swe_mined import data_digest
            payload["data"] = data_digest(self.env_config)
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


ADD_COMPACT = {"max_operand": 9, "ops": ["+"], "prompt": "compact"}
# The easiest mined tasks of three training projects: one-line mutations inside one function the issue names, whose
# smallest replace fits a 96-token reply (the first eligible of each project, in the dataset's order).
MINED_TRAINING = {
    "instances": ".cache/swe-mined/instances.jsonl", "split": "train",
    "source": {"kind": "local", "repo_path": ".cache/swe-mined/repos/{instance_id}.tar.gz",
               "python": ".cache/swe-mined/envs/{repo_slug}/bin/python"},
    "ids": [f"pypi__cachetools-{h}" for h in ("db23237f09", "33a6162d6f", "062004c07b", "4fd14e8e50", "8336105000", "158c3fb6b1")]
    + [f"pypi__humanize-{h}" for h in ("9befa89581", "479565c276", "a4eb9edc46", "8195e9b710", "5c6c4415ad")]
    + [f"pypi__idna-{h}" for h in ("f393e03fe7", "c425e7a93d", "37592f0425", "1c520d6d93", "1545b1b740")],
}

WARM_STARTS: dict[str, WarmStart] = {
    # Single-digit addition, "7+5=" -> "12". Labels are right 20% of the time and otherwise off by 1
    # or 2, so the model learns the format and roughly where the sum lies: sampled at temperature 1
    # it is right ~16% of the time (greedy ~31%). See bench/results/learning.md.
    "add": WarmStart(env="arithmetic", env_config=ADD_COMPACT, correct_prob=0.2, wrong="offset", offset_max=2,
                     steps=500, learning_rate=1e-3),
    # The same, with long-tailed reply lengths: the answer, then LogNormal(median 8, sigma 1) spaces.
    "add-longtail": WarmStart(env="arithmetic", env_config=ADD_COMPACT, correct_prob=0.2, wrong="offset", offset_max=2,
                              steps=500, learning_rate=1e-3, filler_median=8, filler_sigma=1.0, filler_max=120),
    # FrozenLake 3x3, compact observations (the map only); every reply a uniformly random action,
    # so the model starts as the random policy.
    "lake": WarmStart(env="frozen_lake", env_config={"map_size": 3, "max_turns": 6, "render": "compact"},
                      steps=150, learning_rate=3e-3),
    # SWE-lite tier 1, brief observations, tasks t1-000 … t1-014 only (t1-015 … t1-019 are held out for
    # validation): replace the buggy text, then submit; the replacement is the fix in 30% of the
    # examples and a no-op otherwise (warmstart_swe.py).
    "swe": WarmStart(env="swe_lite", env_config={"tasks": [f"t1-{i:03d}" for i in range(15)], "brief": True},
                     correct_prob=0.3, steps=400, learning_rate=2e-3),
    # The same on 16 mined training tasks of `make swe-tasks` (examples/learn-swe-mined.yaml's swe_train; the held-out
    # tasks and projects are never shown: warmstart_swe_mined.py), as many examples as warm:swe (800 per task). A first
    # run with a fifth of them (160 steps of 16 at 3e-3) left half the first replies malformed (bench/results/learning.md).
    "swe-mined": WarmStart(env="swe", env_config=MINED_TRAINING, correct_prob=0.3, steps=400, learning_rate=2e-3),
}


# ---- names

def warm_start(name: str) -> WarmStart:
    if name not in WARM_STARTS:
        raise ValueError(f"unknown warm-start {name!r}; expected one of {', '.join(WARM_STARTS)}")
    return WARM_STARTS[name]


# ---- examples: (prompt ids, response ids, loss mask), laid out exactly as a rollout records them

def _seed(*parts: Any) -> int:
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "little") >> 1


def _reply(spec: WarmStart, content: str, rng) -> str:
    text = f"<answer>{content}</answer>" if spec.answer_format == "tagged" else content
    if spec.filler_median is not None:
        # Box-Muller from the env rng, so the lengths do not depend on torch or Python versions.
        z = math.sqrt(-2.0 * math.log(1.0 - rng.uniform())) * math.cos(2.0 * math.pi * rng.uniform())
        filler = " " * min(spec.filler_max, round(spec.filler_median * math.exp(spec.filler_sigma * z)))
        text = filler + text if spec.filler_at == "start" else text + filler
    return text


def _arithmetic_example(spec: WarmStart, i: int, tok) -> tuple[list[int], list[int], list[int]]:
    from ..envs.arithmetic import ArithmeticConfig, ArithmeticEnv
    from ..envs.rng import SplitMix64

    config = ArithmeticConfig(**spec.env_config)
    rng = SplitMix64(_seed(spec.data_seed, "example", i))
    env = ArithmeticEnv()
    observation = env.reset(rng.next_u64() >> 1, config)
    answer = env.answer
    if rng.uniform() >= spec.correct_prob:
        if spec.wrong == "offset":
            d = rng.between(1, spec.offset_max)
            answer += d if rng.below(2) else -d
        else:
            other = ArithmeticEnv()
            other.reset(rng.next_u64() >> 1, config)
            answer = other.answer  # the answer to another question: right only by chance
    prompt = _chat_prompt(tok, [{"role": "user", "content": observation}])
    response = tok.encode(_reply(spec, str(answer), rng), add_special_tokens=False) + [tok.eos_token_id]
    return prompt, response, [1] * len(response)


def _frozen_lake_example(spec: WarmStart, i: int, tok, max_context: int) -> tuple[list[int], list[int], list[int]]:
    from ..envs.frozen_lake import ACTIONS, FrozenLakeConfig, FrozenLakeEnv
    from ..envs.rng import SplitMix64
    from .chat import hf_chat_continuation

    config = FrozenLakeConfig(**spec.env_config)
    rng = SplitMix64(_seed(spec.data_seed, "example", i))
    env = FrozenLakeEnv()
    messages = [{"role": "user", "content": env.reset(rng.next_u64() >> 1, config)}]
    prompt = _chat_prompt(tok, messages)
    response: list[int] = []
    mask: list[int] = []
    while True:
        text = _reply(spec, rng.choice(ACTIONS), rng)
        turn = tok.encode(text, add_special_tokens=False) + [tok.eos_token_id]
        if len(prompt) + len(response) + len(turn) > max_context:
            break
        response += turn
        mask += [1] * len(turn)
        messages.append({"role": "assistant", "content": text})
        result = env.step(text)
        if result.done:
            break
        new = [{"role": "user", "content": result.observation}]
        between = hf_chat_continuation(tok, messages, new)
        messages += new
        response += between
        mask += [0] * len(between)
    while mask and mask[-1] == 0:  # a context cut right after an observation: drop its tail
        response.pop()
        mask.pop()
    return prompt, response, mask


def _chat_prompt(tok, messages: list[dict[str, str]]) -> list[int]:
    out = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return [int(t) for t in (out["input_ids"] if hasattr(out, "keys") else out)]


def _swe_example(spec: WarmStart, i: int, tok) -> tuple[list[int], list[int], list[int]]:
    """swe_lite (warmstart_swe.py) and swe (warmstart_swe_mined.py): the same two turns on generated or mined tasks."""
    from ..envs.rng import SplitMix64
    from .chat import hf_chat_continuation
    from .warmstart_swe import swe_transcript
    from .warmstart_swe_mined import mined_transcript

    rng = SplitMix64(_seed(spec.data_seed, "example", i))
    tasks = spec.env_config["tasks" if spec.env == "swe_lite" else "ids"]
    task_id, correct = tasks[rng.below(len(tasks))], rng.uniform() < spec.correct_prob
    first, turns = swe_transcript(task_id, correct) if spec.env == "swe_lite" else mined_transcript(spec.env_config, task_id, correct)
    messages = [{"role": "user", "content": first}]
    prompt = _chat_prompt(tok, messages)
    response: list[int] = []
    mask: list[int] = []
    for reply, observation in turns:
        said = tok.encode(reply, add_special_tokens=False) + [tok.eos_token_id]
        response += said
        mask += [1] * len(said)
        messages.append({"role": "assistant", "content": reply})
        if observation:
            new = [{"role": "user", "content": observation}]
            between = hf_chat_continuation(tok, messages, new)
            messages += new
            response += between
            mask += [0] * len(between)
    return prompt, response, mask


def make_example(spec: WarmStart, i: int, tok, max_context: int = 512) -> tuple[list[int], list[int], list[int]]:
    """Example ``i`` of ``spec``: a pure function of (spec, i)."""
    if spec.env == "arithmetic":
        return _arithmetic_example(spec, i, tok)
    if spec.env in ("swe_lite", "swe"):
        return _swe_example(spec, i, tok)
    return _frozen_lake_example(spec, i, tok, max_context)


# ---- training

def train_warm_start(model, tok, spec: WarmStart, log=None) -> dict[str, float]:
    """Supervised steps on ``spec``'s examples (cross-entropy of the reply tokens); returns summary stats."""
    import torch

    from .sequences import pad_sequences, response_logprobs

    max_context = int(getattr(model.config, "max_position_embeddings", 512))
    optimizer = torch.optim.AdamW(model.parameters(), lr=spec.learning_rate, weight_decay=0.0)
    pad_id = tok.pad_token_id
    losses: list[float] = []
    for step in range(spec.steps):
        examples = [make_example(spec, step * spec.batch_size + j, tok, max_context) for j in range(spec.batch_size)]
        mb = pad_sequences([(p, r) for p, r, _ in examples], pad_id)
        mask = mb.response_mask.clone()
        for row, (_, _, m) in enumerate(examples):
            mask[row, :len(m)] *= torch.tensor(m, dtype=torch.float32)
        logits = model(input_ids=mb.input_ids, attention_mask=mb.attention_mask, position_ids=mb.position_ids,
                       use_cache=False).logits
        loss = -(response_logprobs(logits, mb, 1.0) * mask).sum() / mask.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if log and (step % 25 == 0 or step == spec.steps - 1):
            log(f"warm-start step {step}: loss {losses[-1]:.3f}")
    model.eval()
    tail = losses[-10:] or [float("nan")]
    return {"first_loss": losses[0] if losses else float("nan"), "final_loss": sum(tail) / len(tail)}


def build_warm_model(preset: str, seed: int, spec: WarmStart, out_dir: str | os.PathLike,
                     cache_dir: str | os.PathLike | None = None, log=None) -> Path:
    """Warm-starts ``tiny:<preset>`` (seed ``seed``) and saves it to ``out_dir`` atomically."""
    from .tiny import load_pretrained, tiny_model_dir

    started = time.perf_counter()
    model, tok = load_pretrained(tiny_model_dir(preset, seed, cache_dir))
    stats = train_warm_start(model, tok, spec, log)
    out = Path(out_dir)
    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    model.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    record = {"preset": preset, "seed": seed, "key": spec.key(preset, seed), "spec": asdict(spec),
              "format_version": FORMAT_VERSION, **stats, "build_s": round(time.perf_counter() - started, 1)}
    (tmp / SPEC_FILE).write_text(json.dumps(record, indent=2) + "\n")
    tmp.rename(out)  # atomic: a concurrent reader never sees half a model
    return out


def resolve_warm_path(preset: str, warm: str | WarmStart, seed: int, cache_dir: str | os.PathLike, log=None) -> Path:
    """The cached directory of ``preset`` + warm-start ``warm``, built on first use.

    Concurrent callers (an inference server and a trainer starting together) take
    a file lock, so one builds and the others wait and then load its result.
    """
    import fcntl

    spec = warm_start(warm) if isinstance(warm, str) else warm
    label = warm if isinstance(warm, str) else "custom"
    root = Path(cache_dir)
    target = root / f"tiny-{preset}-seed{seed}-warm-{label}-{spec.key(preset, seed)[:12]}"
    if target.exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            build_warm_model(preset, seed, spec, target, cache_dir, log)
    return target


def main(argv: list[str] | None = None) -> None:
    import argparse

    from .names import split_name
    from .tiny import default_cache_dir

    parser = argparse.ArgumentParser(description="Build (or find) a warm-started tiny model and print its directory.")
    parser.add_argument("model", help="tiny:<preset>+warm:<name>; names: " + ", ".join(WARM_STARTS))
    parser.add_argument("--seed", type=int, default=0, help="model_seed")
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args(argv)
    preset, warm = split_name(args.model)
    if warm is None:
        parser.error(f"{args.model!r} names no warm-start: expected tiny:<preset>+warm:<name>")
    print(resolve_warm_path(preset, warm, args.seed, args.cache_dir or default_cache_dir(), log=print))


if __name__ == "__main__":
    main()
