"""Benchmark of the trainer role (a script, not a test; numbers go in reports).

Samples/s and tokens/s of torch train steps on a tiny model, in-process through
the ASGI app: --steps steps of --batch samples, each a --prompt-token prompt
and a --response-token response, micro-batch --micro-batch, PPO, one optimizer
step per train step. The first step is a warm-up and is not counted.

Run from the repo root:
    .venv/bin/python bench/engines/trainer_bench.py [--model tiny:default] [--batch 32] [--steps 5]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ENGINES = Path(__file__).resolve().parents[2] / "python-engines"
sys.path.insert(0, str(ENGINES))


def make_batch(step: int, batch: int, prompt: int, response: int, vocab: int, rng: random.Random) -> list[dict]:
    return [{
        "uid": f"s{step}-{i}", "group_id": f"s{step}-g{i // 8}",
        "prompt_ids": [rng.randrange(6, vocab) for _ in range(prompt)],
        "response_ids": [rng.randrange(6, vocab) for _ in range(response)],
        "old_logprobs": [-4.0] * response, "reward": float(rng.random() < 0.5),
    } for i in range(batch)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="tiny:default")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--prompt-tokens", type=int, default=32)
    parser.add_argument("--response-tokens", type=int, default=64)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    from fastapi.testclient import TestClient

    from rollflow_engines.app import create_app
    from rollflow_engines.config import load_config

    with tempfile.TemporaryDirectory() as export_dir:
        flags = [f"model={args.model}", f"micro_batch_size={args.micro_batch}", "learning_rate=1e-4", f"export_dir={export_dir}"]
        app = create_app(load_config(None, {"role": "trainer", "backend": "torch"}, flags))
        client = TestClient(app)
        vocab = app.state.trainer.backend.vocab_size
        rng = random.Random(0)
        timings = []
        for step in range(args.steps + 1):
            body = {"step": step, "batch": make_batch(step, args.batch, args.prompt_tokens, args.response_tokens, vocab, rng)}
            started = time.perf_counter()
            r = client.post("/train_step", json=body)
            r.raise_for_status()
            if step > 0:
                timings.append(time.perf_counter() - started)
    seconds = sum(timings)
    samples = args.batch * len(timings)
    print(json.dumps({
        "model": args.model, "batch": args.batch, "micro_batch": args.micro_batch,
        "prompt_tokens": args.prompt_tokens, "response_tokens": args.response_tokens, "steps": len(timings),
        "s_per_step": round(seconds / len(timings), 3), "samples_per_s": round(samples / seconds, 1),
        "response_tokens_per_s": round(samples * args.response_tokens / seconds, 1),
    }))


if __name__ == "__main__":
    main()
