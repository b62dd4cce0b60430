"""The GPU check (bench/gpu/run.sh + check.py, docs/gpu.md) rehearsed on CPU: the same script, the small
Qwen2 preset, tiny batches. It must hold every figure and pass its logprob check, and a broken part must
fail the run (exit 1) under its own name."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RUN = ROOT / "bench" / "gpu" / "run.sh"
CHECK = ROOT / "bench" / "gpu" / "check.py"
SMALL = ["--device", "cpu", "--model", "tiny:qwen2-small", "--gen-batches", "1,4", "--gen-tokens", "6", "--prompt-tokens", "6",
         "--train-batch", "8", "--train-response-tokens", "6", "--micro-batch", "4", "--lora-rank", "4", "--torch-threads", "1",
         "--start-timeout", "120"]


def run(tmp_path: Path, *args: str, script: list[str] | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "ROLLFLOW_MODEL_CACHE": str(tmp_path / "models")}
    done = subprocess.run([*(script or ["bash", str(RUN)]), *SMALL, "--out", str(out), "--work", str(tmp_path / "work"), *args],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    results = out / "results.json"
    return done, json.loads(results.read_text()) if results.exists() else {}


def test_the_check_runs_on_cpu_with_every_figure_and_matching_logprobs(tmp_path):
    done, r = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert r["passed"] and r["failed"] == [] and all(p["ok"] for p in r["parts"].values())
    f = r["figures"]
    assert f["model"]["architecture"] == ["Qwen2ForCausalLM"] and f["model"]["parameters"] > 0
    assert set(f["generation"]) == {"1", "4"}
    assert all(row["tokens"] == int(b) * 6 and row["tokens_per_s"] > 0 for b, row in f["generation"].items())
    assert f["train_step"]["batch"] == 8 and f["train_step"]["samples_per_s"] > 0
    sync = f["weight_sync"]
    assert sync["version"] == 2 and sync["export_s"] > 0 and sync["update_s"] > 0 and sync["safetensors_bytes"] > 0
    # float32 on both servers: within 2e-4, as tests/consistency holds them.
    assert r["dtype"] == "float32" and r["tolerance"] == 2e-4
    assert f["logprob_match"]["passed"] and f["logprob_match"]["max_abs_diff"] <= 2e-4 and f["logprob_match"]["tokens"] > 0
    lora = f["lora"]
    assert lora["rank"] == 4 and lora["samples_per_s"] > 0 and lora["logprob_match"]["passed"]
    assert lora["adapter_sync"]["safetensors_bytes"] < sync["safetensors_bytes"]  # the adapter alone travels
    assert f["peak_cuda_memory"] == "n/a (device cpu)"
    md = (tmp_path / "out" / "results.md").read_text()
    assert "**passed**" in md and "tokens/s" in md and "n/a (device cpu)" in md
    assert (tmp_path / "out" / "logs" / "trainer.log").exists()


def test_a_server_that_cannot_start_fails_the_run_naming_the_part_and_the_server(tmp_path):
    # Both trainers (full and LoRA) refuse fp16 at start (exit 2); the inference servers would serve it. Which
    # trainer is seen to exit first depends on the machine's scheduling, and either is the right report.
    done, r = run(tmp_path, "--dtype", "fp16")
    assert done.returncode == 1
    assert re.search(r"part start-servers FAILED: (lora-)?trainer server exited with status 2", done.stderr), done.stderr
    assert "FAILED part(s): start-servers, generation, train-step, weight-sync, logprob-match, lora, memory" in done.stderr
    assert r["parts"]["generation"]["error"].startswith("not run: needs part(s) start-servers")
    assert not r["passed"]


def test_a_failing_part_is_named_and_so_are_the_parts_that_needed_it(tmp_path):
    done, r = run(tmp_path, "--fail-part", "build-model", script=[sys.executable, str(CHECK)])
    assert done.returncode == 1
    assert "part build-model FAILED: failed on purpose" in done.stderr
    assert r["failed"] == ["build-model", "start-servers", "generation", "train-step", "weight-sync", "logprob-match", "lora", "memory"]
    assert "part **build-model** failed" in (tmp_path / "out" / "results.md").read_text()
