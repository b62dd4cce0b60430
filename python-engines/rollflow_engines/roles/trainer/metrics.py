"""Prometheus metrics of one trainer server, in a registry of its own (one per app,
so several apps in one test process do not collide)."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from ...devices import cuda_peak_bytes
from .backend import TrainerBackend
from .batch import PreparedBatch
from .contracts import TrainStepResponse

PREFIX = "rollflow_trainer_"


class TrainerMetrics:
    def __init__(self, backend: TrainerBackend):
        self.registry = CollectorRegistry()
        r = self.registry
        self.steps = Counter(PREFIX + "steps", "Train steps completed (replayed retries not counted).", registry=r)
        self.samples = Counter(PREFIX + "samples", "Samples trained on.", registry=r)
        self.tokens = Counter(PREFIX + "tokens", "Response tokens trained on.", registry=r)
        self.last_loss = Gauge(PREFIX + "last_loss", "losses/total of the last train step.", registry=r)
        self.last_grad_norm = Gauge(PREFIX + "last_grad_norm", "grad_norm of the last train step (before clipping).", registry=r)
        self.busy = Gauge(PREFIX + "busy", "1 while a train step runs, else 0.", registry=r)
        self.version = Gauge(PREFIX + "version", "Policy version of the weights (train steps applied).", registry=r)
        self.step_seconds = Histogram(PREFIX + "step_seconds", "Wall time of a train step's compute.", registry=r,
                                      buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800))
        self.cuda_peak = Gauge(PREFIX + "cuda_peak_memory_bytes", "torch.cuda.max_memory_allocated of this process "
                               "(0 on CPU).", registry=r)
        self.cuda_peak.set_function(cuda_peak_bytes)
        self.attach(backend)

    def attach(self, backend: TrainerBackend) -> None:
        """Follow ``backend`` (called again when /reset replaces the backend)."""
        self.version.set_function(lambda: backend.version)
        backend.on_commit.append(self.observe)

    def observe(self, response: TrainStepResponse, batch: PreparedBatch) -> None:
        m = response.metrics
        self.steps.inc()
        self.samples.inc(len(batch.samples))
        self.tokens.inc(batch.tokens)
        self.last_loss.set(m.get("losses/total", float("nan")))
        self.last_grad_norm.set(m.get("grad_norm", float("nan")))
        self.step_seconds.observe(m.get("timing/train_s", 0.0))

    def render(self) -> bytes:
        return generate_latest(self.registry)
