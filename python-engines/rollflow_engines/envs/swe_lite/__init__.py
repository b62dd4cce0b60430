"""SWE-lite: small generated Python repositories with a planted bug, fixed by an agent in a sandbox (docs/swe-lite.md)."""
from __future__ import annotations

from .env import SweLiteEnv
from .tasks import Task, generate_task, task_ids

__all__ = ["SweLiteEnv", "Task", "generate_task", "task_ids"]
