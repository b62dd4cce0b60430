#!/usr/bin/env python3
"""The GPU check of the torch engines (docs/gpu.md): starts the real inference and trainer servers
(``python -m rollflow_engines serve --backend torch``) on one device, drives them over HTTP, and writes
its figures to ``--out``: results.json and results.md.

Parts, in order (each named in the output; a failed part fails the parts that need it, never silently):

  build-model     the tiny:<preset> model directory, built from code (random weights, seeded)
  start-servers   inference + trainer (full fine-tuning), and a LoRA pair of both, on --device
  generation      /v1/completions tokens/s at each --gen-batches size (n samples of one prompt, decoded together)
  train-step      /train_step samples/s at --train-batch (a warm-up step first, then the timed one)
  weight-sync     /export_weights, then /pause, /update_weights, /resume on the inference server: seconds each
  logprob-match   after the sync: the inference server's logprobs against the trainer's /logprobs, within TOLERANCE
  lora            one LoRA train step (peft), the adapter's sync and the same logprob match
  memory          each server's peak torch.cuda.max_memory_allocated (its /metrics); n/a on CPU

Exit 0 when every part passed, 1 naming the failed parts, 2 for bad arguments.
Needs torch, transformers and httpx in this interpreter; the servers need python-engines' stack (run.sh
installs it from .whl/ on the GPU machine).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ROOT / "python-engines"
sys.path.insert(0, str(ENGINES))

# Largest |logprob_inference - logprob_trainer| over every generated token, by dtype (docs/gpu.md says why).
TOLERANCE = {"float32": 2e-4, "bfloat16": 0.1}
PARTS = ["build-model", "start-servers", "generation", "train-step", "weight-sync", "logprob-match", "lora", "memory"]
DEFAULTS = {  # per device: the GPU run is the point; the CPU run is its small rehearsal
    "cuda": {"model": "tiny:qwen2-0.5b", "dtype": "bf16", "micro_batch": 8},
    "cpu": {"model": "tiny:qwen2-small", "dtype": "fp32", "micro_batch": 8},
}


class PartFailed(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One ``serve`` process; its output goes to <logs>/<name>.log."""

    def __init__(self, name: str, role: str, options: dict, logs: Path, env: dict):
        self.name, self.port = name, free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = logs / f"{name}.log"
        args = [sys.executable, "-m", "rollflow_engines", "serve", "--role", role, "--backend", "torch",
                "--host", "127.0.0.1", "--port", str(self.port)]
        for key, value in options.items():
            args += ["--option", f"{key}={value}"]
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.client = httpx.Client(base_url=self.base, timeout=600)

    def tail(self, lines: int = 6) -> str:
        text = self.log.read_text(errors="replace").strip().splitlines() if self.log.exists() else []
        return " | ".join(text[-lines:])

    def ready(self) -> bool:
        """True once /health answers; PartFailed if the process has exited."""
        if self.proc.poll() is not None:
            raise PartFailed(f"{self.name} server exited with status {self.proc.returncode} before serving: {self.tail()}")
        try:
            return self.client.get("/health", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def post(self, path: str, body: dict) -> dict:
        try:
            r = self.client.post(path, json=body)
        except httpx.TransportError as e:
            raise PartFailed(f"{self.name} server at {self.base} unreachable on {path}: {e!r}") from e
        if r.status_code != 200:
            raise PartFailed(f"{self.name} {path} answered {r.status_code}: {r.text[:500]}")
        return r.json()

    def peak_cuda_bytes(self) -> float:
        role = "inference" if "inference" in self.name else "trainer"
        for line in self.client.get("/metrics").text.splitlines():
            if line.startswith(f"rollflow_{role}_cuda_peak_memory_bytes "):
                return float(line.split()[1])
        raise PartFailed(f"{self.name} /metrics has no rollflow_{role}_cuda_peak_memory_bytes")

    def stop(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def prompt_ids(length: int) -> list[int]:
    """A fixed prompt of characters of the tiny tokenizer (ids 6..101 are characters)."""
    return [6 + (i * 7) % 90 for i in range(length)]


def samples_of(choices: list[dict], prompt: list[int], tag: str) -> list[dict]:
    """Train samples from generated choices: groups of 4, rewards 0/1 alternating (GRPO advantages ±1)."""
    return [{"uid": f"{tag}-{i}", "group_id": f"{tag}-g{i // 4}", "prompt_ids": prompt, "response_ids": c["token_ids"],
             "old_logprobs": c["logprobs"], "reward": float(i % 2)} for i, c in enumerate(choices)]


class Check:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.out = Path(args.out)
        self.work = Path(args.work or tempfile.mkdtemp(prefix="rollflow-gpu-check-"))
        self.logs = self.out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.servers: dict[str, Server] = {}
        self.prompt = prompt_ids(args.prompt_tokens)
        from rollflow_engines.models.policy_options import DTYPE_NAMES

        self.dtype = DTYPE_NAMES[args.dtype]
        self.tolerance = TOLERANCE.get(self.dtype)
        self.results: dict = {
            "device": args.device, "model": args.model, "dtype": self.dtype, "tolerance": self.tolerance,
            "settings": {k: getattr(args, k) for k in ("gen_batches", "gen_tokens", "prompt_tokens", "train_batch",
                                                       "train_response_tokens", "micro_batch", "lora_rank", "learning_rate")},
            "machine": self._machine(), "parts": {}, "figures": {},
        }

    def _machine(self) -> dict:
        import torch

        info = {"python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count(),
                "cuda_available": torch.cuda.is_available()}
        if self.args.device == "cuda" and torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
            info["gpu_memory_bytes"] = torch.cuda.get_device_properties(0).total_memory
        return info

    # ---- running parts

    def part(self, name: str, needs: list[str], fn) -> None:
        started = time.perf_counter()
        missing = [n for n in needs if not self.results["parts"].get(n, {}).get("ok")]
        try:
            if missing:
                raise PartFailed(f"not run: needs part(s) {', '.join(missing)}, which failed")
            if self.args.fail_part == name:
                raise PartFailed(f"failed on purpose (--fail-part {name})")
            fn()
            self.results["parts"][name] = {"ok": True, "seconds": round(time.perf_counter() - started, 3)}
            print(f"check: part {name} ok ({time.perf_counter() - started:.1f}s)", file=sys.stderr, flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported under the part's name
            error = str(e) if isinstance(e, PartFailed) else f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}"
            self.results["parts"][name] = {"ok": False, "error": error, "seconds": round(time.perf_counter() - started, 3)}
            print(f"check: part {name} FAILED: {error}", file=sys.stderr, flush=True)

    def run(self) -> int:
        try:
            self.part("build-model", [], self.build_model)
            self.part("start-servers", ["build-model"], self.start_servers)
            self.part("generation", ["start-servers"], self.generation)
            self.part("train-step", ["start-servers"], self.train_step)
            self.part("weight-sync", ["train-step"], self.weight_sync)
            self.part("logprob-match", ["weight-sync"], self.logprob_match)
            self.part("lora", ["start-servers"], self.lora)
            self.part("memory", ["start-servers"], self.memory)
        finally:
            for server in self.servers.values():
                server.stop()
        failed = [n for n in PARTS if not self.results["parts"].get(n, {}).get("ok")]
        self.results["failed"] = failed
        self.results["passed"] = not failed
        self.write()
        if failed:
            print(f"check: FAILED part(s): {', '.join(failed)} (details in {self.out / 'results.json'})", file=sys.stderr)
            return 1
        print(f"check: every part passed; figures in {self.out / 'results.md'}", file=sys.stderr)
        return 0

    # ---- the parts

    def build_model(self) -> None:
        import torch
        from safetensors import safe_open

        from rollflow_engines.models import resolve_model_path

        started = time.perf_counter()
        path = resolve_model_path(self.args.model, self.args.model_seed)
        params = 0
        for f in path.glob("*.safetensors"):
            with safe_open(f, "pt") as st:
                params += sum(torch.Size(st.get_slice(k).get_shape()).numel() for k in st.keys())
        self.model_path = path
        self.results["figures"]["model"] = {"path": str(path), "parameters": params,
                                            "build_or_find_s": round(time.perf_counter() - started, 3),
                                            "architecture": json.loads((path / "config.json").read_text()).get("architectures")}

    def start_servers(self) -> None:
        a = self.args
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ENGINES), os.environ.get("PYTHONPATH")) if p)}
        model = {"model": a.model, "model_seed": a.model_seed, "dtype": a.dtype, "device": a.device}
        biggest = max(a.gen_batches + [a.train_batch])
        self.max_n = biggest
        inference = {**model, "max_batch": biggest, "max_n": biggest}
        trainer = {**model, "micro_batch_size": a.micro_batch, "learning_rate": a.learning_rate}
        if a.torch_threads:
            inference["torch_threads"] = trainer["torch_threads"] = a.torch_threads
        lora = {"lora_rank": a.lora_rank}
        plan = {"inference": ("inference", inference), "trainer": ("trainer", {**trainer, "export_dir": self.work / "exports"}),
                "lora-inference": ("inference", {**inference, **lora}),
                "lora-trainer": ("trainer", {**trainer, **lora, "export_dir": self.work / "lora-exports"})}
        started = time.perf_counter()
        for name, (role, options) in plan.items():
            self.servers[name] = Server(name, role, options, self.logs, env)
        deadline, waiting = time.monotonic() + a.start_timeout, list(self.servers.values())
        while waiting:  # all at once: a server that exits fails the part at once, whichever it is
            waiting = [s for s in waiting if not s.ready()]
            if waiting and time.monotonic() > deadline:
                raise PartFailed(f"{waiting[0].name} server at {waiting[0].base} never answered /health in {a.start_timeout} s: {waiting[0].tail()}")
            time.sleep(0.2)
        self.results["figures"]["start_servers_s"] = round(time.perf_counter() - started, 3)

    def generate(self, server: Server, n: int, max_tokens: int, seed: int) -> tuple[list[dict], float]:
        started = time.perf_counter()
        body = server.post("/v1/completions", {"prompt": self.prompt, "n": n, "max_tokens": max_tokens, "temperature": 1.0,
                                               "seed": seed, "ignore_eos": True})
        return body["choices"], time.perf_counter() - started

    def generation(self) -> None:
        inference = self.servers["inference"]
        self.generate(inference, 1, 4, 0)  # warm-up: first kernels, allocator
        rows = {}
        for b in self.args.gen_batches:
            choices, seconds = self.generate(inference, b, self.args.gen_tokens, b)
            tokens = sum(len(c["token_ids"]) for c in choices)
            if tokens != b * self.args.gen_tokens:
                raise PartFailed(f"batch {b}: {tokens} tokens generated, expected {b * self.args.gen_tokens}")
            rows[str(b)] = {"tokens": tokens, "seconds": round(seconds, 4), "tokens_per_s": round(tokens / seconds, 2)}
        self.results["figures"]["generation"] = rows

    def train(self, inference: Server, trainer: Server, step: int, tag: str) -> tuple[dict, float]:
        choices, _ = self.generate(inference, self.args.train_batch, self.args.train_response_tokens, 100 + step)
        started = time.perf_counter()
        body = trainer.post("/train_step", {"step": step, "batch": samples_of(choices, self.prompt, f"{tag}{step}"),
                                            "pg_variant": "ppo", "adv_estimator": "grpo"})
        return body["metrics"], time.perf_counter() - started

    def train_step(self) -> None:
        inference, trainer = self.servers["inference"], self.servers["trainer"]
        _, first = self.train(inference, trainer, 0, "s")
        metrics, seconds = self.train(inference, trainer, 1, "s")
        n = self.args.train_batch
        self.results["figures"]["train_step"] = {
            "batch": n, "first_step_s": round(first, 4), "step_s": round(seconds, 4), "samples_per_s": round(n / seconds, 2),
            "trainer_compute_s": round(metrics.get("timing/train_s", float("nan")), 4), "loss": metrics.get("losses/total"),
            "grad_norm": metrics.get("grad_norm")}

    def sync(self, trainer: Server, inference: Server, version: int) -> dict:
        started = time.perf_counter()
        path = trainer.post("/export_weights", {"version": version})["path"]
        exported = time.perf_counter()
        inference.post("/pause", {"mode": "abort"})
        paused = time.perf_counter()
        loaded = inference.post("/update_weights", {"path": path, "version": version})
        updated = time.perf_counter()
        inference.post("/resume", {})
        size = sum(f.stat().st_size for f in Path(path).glob("*.safetensors"))
        return {"version": version, "export_s": round(exported - started, 4), "update_s": round(updated - paused, 4),
                "server_load_s": round(loaded["load_seconds"], 4), "total_s": round(time.perf_counter() - started, 4),
                "safetensors_bytes": size}

    def weight_sync(self) -> None:
        self.results["figures"]["weight_sync"] = self.sync(self.servers["trainer"], self.servers["inference"], 2)

    def match(self, inference: Server, trainer: Server, version: int) -> dict:
        """The inference server's logprobs of its own samples against the trainer's for the same tokens."""
        choices, _ = self.generate(inference, min(8, self.max_n), self.args.gen_tokens, 7)
        spans = {s["version"] for c in choices for s in c["version_spans"]}
        if spans != {version}:
            raise PartFailed(f"generated under weight versions {sorted(spans)}, expected {version} after the sync")
        theirs = trainer.post("/logprobs", {"sequences": [{"prompt_ids": self.prompt, "response_ids": c["token_ids"]}
                                                          for c in choices], "temperature": 1.0})["logprobs"]
        diffs = [abs(a - b) for c, t in zip(choices, theirs, strict=True) for a, b in zip(c["logprobs"], t, strict=True)]
        worst, mean = max(diffs), sum(diffs) / len(diffs)
        out = {"tokens": len(diffs), "max_abs_diff": worst, "mean_abs_diff": mean, "tolerance": self.tolerance,
               "passed": self.tolerance is not None and worst <= self.tolerance}
        if not out["passed"]:
            raise PartFailed(f"logprobs differ by up to {worst:.3g} (mean {mean:.3g}) over {len(diffs)} tokens; "
                             f"tolerance for {self.dtype}: {self.tolerance}")
        return out

    def logprob_match(self) -> None:
        self.results["figures"]["logprob_match"] = self.match(self.servers["inference"], self.servers["trainer"], 2)

    def lora(self) -> None:
        inference, trainer = self.servers["lora-inference"], self.servers["lora-trainer"]
        metrics, seconds = self.train(inference, trainer, 0, "lora")
        sync = self.sync(trainer, inference, 1)
        n = self.args.train_batch
        self.results["figures"]["lora"] = {
            "rank": self.args.lora_rank, "batch": n, "step_s": round(seconds, 4), "samples_per_s": round(n / seconds, 2),
            "loss": metrics.get("losses/total"), "grad_norm": metrics.get("grad_norm"), "adapter_sync": sync,
            "logprob_match": self.match(inference, trainer, 1)}

    def memory(self) -> None:
        peaks = {name: s.peak_cuda_bytes() for name, s in self.servers.items()}
        if self.args.device == "cpu":
            self.results["figures"]["peak_cuda_memory"] = "n/a (device cpu)"
        else:
            self.results["figures"]["peak_cuda_memory"] = {name: {"bytes": b, "GiB": round(b / 2**30, 3)} for name, b in peaks.items()}

    # ---- output

    def write(self) -> None:
        (self.out / "results.json").write_text(json.dumps(self.results, indent=2, default=str) + "\n")
        (self.out / "results.md").write_text(markdown(self.results))


def markdown(r: dict) -> str:
    f, m = r["figures"], r["machine"]
    where = m.get("gpu") or f"CPU ({m['cpus']} cores visible)"
    lines = [f"# GPU check: device {r['device']}, {r['model']} in {r['dtype']}", "",
             f"Machine: {where}; torch {m['torch']}, Python {m['python']}. "
             f"Result: **{'passed' if r['passed'] else 'FAILED: ' + ', '.join(r['failed'])}**.", ""]
    if "model" in f:
        lines += [f"Model: {f['model']['parameters']:,} parameters ({', '.join(f['model']['architecture'] or [])}, random weights).", ""]
    if "generation" in f:
        lines += ["| generation batch | tokens | seconds | tokens/s |", "|---:|---:|---:|---:|"]
        lines += [f"| {b} | {row['tokens']} | {row['seconds']} | {row['tokens_per_s']} |" for b, row in f["generation"].items()]
        lines.append("")
    if "train_step" in f:
        t = f["train_step"]
        lines.append(f"- train step, batch {t['batch']}: {t['step_s']} s ({t['samples_per_s']} samples/s; the first, warm-up step {t['first_step_s']} s)")
    if "weight_sync" in f:
        s = f["weight_sync"]
        lines.append(f"- weight sync: export {s['export_s']} s + update_weights {s['update_s']} s (server load {s['server_load_s']} s), "
                     f"{s['safetensors_bytes'] / 2**20:.1f} MiB of safetensors")
    if "logprob_match" in f:
        p = f["logprob_match"]
        lines.append(f"- logprobs after the sync: max |Δ| {p['max_abs_diff']:.3g}, mean {p['mean_abs_diff']:.3g} over {p['tokens']} tokens "
                     f"(tolerance {p['tolerance']})")
    if "lora" in f:
        lo = f["lora"]
        lines.append(f"- LoRA r={lo['rank']} step, batch {lo['batch']}: {lo['step_s']} s ({lo['samples_per_s']} samples/s; its server's first step, "
                     f"warm-up included); adapter sync "
                     f"{lo['adapter_sync']['total_s']} s ({lo['adapter_sync']['safetensors_bytes'] / 2**20:.2f} MiB); "
                     f"logprobs max |Δ| {lo['logprob_match']['max_abs_diff']:.3g}")
    if "peak_cuda_memory" in f:
        pm = f["peak_cuda_memory"]
        lines.append("- peak GPU memory (torch.cuda.max_memory_allocated per server): " + (
            pm if isinstance(pm, str) else ", ".join(f"{k} {v['GiB']} GiB" for k, v in pm.items())))
    lines.append("")
    for name, part in r["parts"].items():
        if not part["ok"]:
            lines.append(f"- part **{name}** failed: {part['error'].splitlines()[0]}")
    return "\n".join(lines) + "\n"


def batches(text: str) -> list[int]:
    values = [int(v) for v in text.split(",") if v.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("expected positive integers separated by commas")
    return values


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cuda", "cpu"], required=True)
    p.add_argument("--out", required=True, help="results directory (results.json, results.md, logs/)")
    p.add_argument("--work", help="scratch directory for weight exports (default: a new temporary one)")
    p.add_argument("--model", help="tiny:<preset> or a model directory (default: tiny:qwen2-0.5b on cuda, tiny:qwen2-small on cpu)")
    p.add_argument("--model-seed", type=int, default=0)
    p.add_argument("--dtype", help="default: bf16 on cuda, fp32 on cpu")
    p.add_argument("--gen-batches", type=batches, default=[1, 8, 64])
    p.add_argument("--gen-tokens", type=int, default=64, help="tokens generated per sample")
    p.add_argument("--prompt-tokens", type=int, default=32)
    p.add_argument("--train-batch", type=int, default=32)
    p.add_argument("--train-response-tokens", type=int, default=64)
    p.add_argument("--micro-batch", type=int, help="trainer micro_batch_size (default 8)")
    p.add_argument("--lora-rank", type=int, default=8)
    p.add_argument("--learning-rate", type=float, default=1e-4)
    p.add_argument("--torch-threads", type=int, help="torch_threads of each server (default: torch's choice)")
    p.add_argument("--start-timeout", type=float, default=300, help="seconds for every server to answer /health")
    p.add_argument("--fail-part", choices=PARTS, help="make this part fail (to test the failure path)")
    args = p.parse_args(argv)
    for key, value in DEFAULTS[args.device].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return Check(args).run()


if __name__ == "__main__":
    sys.exit(main())
