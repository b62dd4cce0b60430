"""Prometheus metrics of one inference server.

Each app gets its own CollectorRegistry, so several servers can live in one
process (tests, benchmarks) without their counters colliding. Gauges read the
engine's state when scraped instead of being updated on every step.
"""
from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from ...devices import cuda_peak_bytes

PREFIX = "rollflow_inference_"


class InferenceMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.running = Gauge(PREFIX + "running_requests", "Sequences (one per choice) in the running batch.", registry=r)
        self.waiting = Gauge(PREFIX + "waiting_requests", "Sequences accepted but not running (batch full or server paused).", registry=r)
        self.version = Gauge(PREFIX + "weight_version", "Weight version currently loaded.", registry=r)
        self.paused = Gauge(PREFIX + "paused", "1 while the server is paused (any mode), else 0.", registry=r)
        self.tokens_generated = Counter(PREFIX + "tokens_generated", "Completion tokens generated.", registry=r)
        self.prompt_tokens = Counter(PREFIX + "prompt_tokens", "Prompt tokens of accepted requests (once per request, whatever n).", registry=r)
        self.requests = Counter(PREFIX + "requests", "Sequences (one per choice) finished, by finish_reason.",
                                ["finish_reason"], registry=r)
        self.replacement_chars = Counter(PREFIX + "decode_replacement_chars", "U+FFFD characters in decoded completion "
                                         "texts: token bytes that are not UTF-8 (e.g. a character cut by max_tokens).", registry=r)
        self.cuda_peak = Gauge(PREFIX + "cuda_peak_memory_bytes", "torch.cuda.max_memory_allocated of this process "
                               "(0 on CPU).", registry=r)
        self.cuda_peak.set_function(cuda_peak_bytes)
        for reason in ("stop", "length", "abort"):
            self.requests.labels(finish_reason=reason)  # present at 0 from the start

    def bind(self, engine: Any) -> None:
        """Reads running/waiting/version/paused from ``engine.state()`` at scrape time."""
        self.running.set_function(lambda: engine.state()["running"])
        self.waiting.set_function(lambda: engine.state()["waiting"])
        self.version.set_function(lambda: engine.state()["version"])
        self.paused.set_function(lambda: 1.0 if engine.state()["paused"] else 0.0)

    def render(self) -> bytes:
        return generate_latest(self.registry)
