"""The three roles. Each role package exposes:

- ``Options``: a pydantic model of its settings (``options:`` in the server
  config, or ``--option key=value`` flags), validated before the port is bound;
- ``register(app, backend, options)``: adds the role's endpoints to the app.
"""
from __future__ import annotations

import importlib
from types import ModuleType

ROLE_PACKAGES = {
    "inference": "rollflow_engines.roles.inference",
    "trainer": "rollflow_engines.roles.trainer",
    "env": "rollflow_engines.roles.env",
}


def load_role(role: str) -> ModuleType:
    return importlib.import_module(ROLE_PACKAGES[role])
