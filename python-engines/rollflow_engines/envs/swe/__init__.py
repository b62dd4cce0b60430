"""SWE: SWE-bench-format instances on real repositories, fixed by an agent in a sandbox (docs/swe-bench.md)."""
from __future__ import annotations

from .env import SweConfig, SweEnv
from .instances import Dataset, Fields, Instance, Problem, load_dataset, read_dataset

__all__ = ["Dataset", "Fields", "Instance", "Problem", "SweConfig", "SweEnv", "load_dataset", "read_dataset"]
