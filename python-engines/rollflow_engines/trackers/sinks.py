"""One class per tracker, each with the real library: tensorboard's
SummaryWriter (through torch.utils.tensorboard, which writes tensorboard's
event format) and wandb in offline mode (no network, ever)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Protocol


class Sink(Protocol):
    name: str

    def config(self, hparams: dict[str, Any]) -> None: ...

    def log(self, step: int, scalars: dict[str, float]) -> None: ...

    def close(self) -> None: ...


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested config -> {"a.b.c": leaf}; lists become JSON text (tensorboard's hparams take scalars and strings)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    key = prefix[:-1]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return {key: value if value is not None else "null"}
    return {key: json.dumps(value)}


class TensorboardSink:
    name = "tensorboard"

    def __init__(self, log_dir: str):
        from torch.utils.tensorboard import SummaryWriter

        Path(log_dir).mkdir(parents=True, exist_ok=True)
        self.writer = SummaryWriter(log_dir=log_dir)

    def config(self, hparams: dict[str, Any]) -> None:
        # The whole config as text (readable in the TEXT tab) and its scalar leaves as hparams.
        self.writer.add_text("config", "```\n" + json.dumps(hparams, indent=2) + "\n```", 0)
        self.writer.add_hparams(flatten(hparams), {}, run_name=".")
        self.writer.flush()

    def log(self, step: int, scalars: dict[str, float]) -> None:
        for key, value in scalars.items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()  # a record is on disk when its line is answered

    def close(self) -> None:
        self.writer.close()


class WandbSink:
    name = "wandb"

    def __init__(self, run_id: str, project: str, name: str | None, directory: str, tags: list[str], notes: str | None):
        os.environ["WANDB_MODE"] = "offline"  # never the network, whatever the user's environment says
        os.environ.setdefault("WANDB_SILENT", "true")
        import wandb

        Path(directory).mkdir(parents=True, exist_ok=True)
        # id = the run id and resume allowed: a worker restart logs into the same wandb run.
        self.run = wandb.init(project=project, id=run_id, name=name or run_id, dir=directory, tags=tags or None,
                              notes=notes, mode="offline", resume="allow")

    def config(self, hparams: dict[str, Any]) -> None:
        self.run.config.update(hparams, allow_val_change=True)

    def log(self, step: int, scalars: dict[str, float]) -> None:
        self.run.log(scalars, step=step)

    def close(self) -> None:
        self.run.finish()
