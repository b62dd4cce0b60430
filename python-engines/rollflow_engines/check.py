"""Offline checks of what a run config hands the Python side, with the models the servers use.

``python -m rollflow_engines check [FILE]`` reads one JSON request (FILE, or stdin):

    {"engines":  [{"path": "engines.trainer", "role": "trainer", "backend": "torch", "options": {...}}],
     "envs":     [{"path": "custom_envs.lake", "env_type": "frozen_lake", "env_config": {...}}],
     "verifiers": [{"path": "custom_envs.qa.env_config.verifier", "name": "math_verify"}],
     "other_env_types": ["latency_sim", "dataset"]}

and prints ``{"ok": bool, "problems": [{"path", "given"?, "expected"}]}``: each
problem names its path in the run config (``engines.trainer.options.learning_rate``,
``custom_envs.lake.env_config.map_size``). ``other_env_types`` are env types
served elsewhere (the TypeScript envs): valid names, offered as suggestions.
Nothing is started and no port is bound. Exit 0 when valid, 1 when problems
were found, 2 when the request itself is unusable.
"""
from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .config import BACKENDS_BY_ROLE, Role, role_options_input
from .envs import get_env, known_envs
from .rewards import get_verifier, known_verifiers
from .roles import load_role

_MISSING = object()


class EngineItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    role: Role
    backend: str
    options: dict[str, Any] = Field(default_factory=dict)


class EnvItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    env_type: str
    env_config: dict[str, Any] = Field(default_factory=dict)


class VerifierItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    name: str
    # The settings sent with every reply (the dataset env's verifier_config), checked against the verifier's Config.
    config: dict[str, Any] | None = None
    config_path: str | None = None


class CheckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    engines: list[EngineItem] = Field(default_factory=list)
    envs: list[EnvItem] = Field(default_factory=list)
    verifiers: list[VerifierItem] = Field(default_factory=list)
    other_env_types: list[str] = Field(default_factory=list)


def problem(path: str, expected: str, given: Any = _MISSING) -> dict[str, Any]:
    return {"path": path, "expected": expected} if given is _MISSING else {"path": path, "given": given, "expected": expected}


def join_path(prefix: str, loc: tuple[Any, ...]) -> str:
    path = prefix
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys the (nested) model at ``loc`` accepts; [] where ``loc`` leaves the models."""
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)


def validation_problems(err: ValidationError, prefix: str, model: type[BaseModel]) -> list[dict[str, Any]]:
    out = []
    for e in err.errors():
        loc = tuple(e["loc"])
        path = join_path(prefix, loc)
        if e["type"] == "missing":
            out.append(problem(path, "a value: the key is required"))
        elif e["type"] == "extra_forbidden":
            known = keys_at(model, loc[:-1])
            out.append(problem(path, f"unknown key{did_you_mean(known, str(loc[-1]))} (known here: {', '.join(known)})", e.get("input")))
        else:
            # A validator's ValueError reads "Value error, <our message>": the message is what was expected.
            out.append(problem(path, e["msg"].removeprefix("Value error, "), e.get("input")))
    return out


def did_you_mean(names: list[str], given: str) -> str:
    close = difflib.get_close_matches(given, names, n=1)
    return f"; did you mean {json.dumps(close[0])}?" if close else ""


def one_of(names: list[str], given: str) -> str:
    return f"one of {', '.join(names)}{did_you_mean(names, given)}"


def check_engine(item: EngineItem) -> list[dict[str, Any]]:
    if item.backend not in BACKENDS_BY_ROLE[item.role]:
        return [problem(f"{item.path}.backend", one_of(list(BACKENDS_BY_ROLE[item.role]), item.backend), item.backend)]
    role = load_role(item.role)
    try:
        role.Options.model_validate(role_options_input(role, item.backend, item.options))
    except ValidationError as e:
        # "backend" is injected from the engine's backend field, so its problems belong there.
        return [{**p, "path": p["path"].replace(f"{item.path}.options.backend", f"{item.path}.backend")}
                for p in validation_problems(e, f"{item.path}.options", role.Options)]
    return []


def check_env(item: EnvItem, other_env_types: list[str]) -> list[dict[str, Any]]:
    cls = get_env(item.env_type)
    if cls is None:
        names = sorted({*known_envs(), *other_env_types})
        return [problem(f"{item.path}.env_type", f"a registered env: {one_of(names, item.env_type)}", item.env_type)]
    try:
        cls.Config.model_validate(item.env_config)
    except ValidationError as e:
        return validation_problems(e, f"{item.path}.env_config", cls.Config)
    return []


def check_verifier(item: VerifierItem) -> list[dict[str, Any]]:
    if get_verifier(item.name) is None:
        return [problem(item.path, f"a registered verifier: {one_of(known_verifiers(), item.name)}", item.name)]
    if item.config is not None:
        Config = get_verifier(item.name).Config
        try:
            Config.model_validate(item.config)
        except ValidationError as e:
            return validation_problems(e, item.config_path or f"{item.path}_config", Config)
    return []


def check(request: CheckRequest) -> list[dict[str, Any]]:
    return [
        *(p for e in request.engines for p in check_engine(e)),
        *(p for e in request.envs for p in check_env(e, request.other_env_types)),
        *(p for v in request.verifiers for p in check_verifier(v)),
    ]


def main(source: str | None) -> int:
    try:
        text = sys.stdin.read() if source in (None, "-") else Path(source).read_text(encoding="utf-8")
        request = CheckRequest.model_validate_json(text)
    except OSError as e:
        print(f"rollflow_engines check: cannot read {source}: {e.strerror}", file=sys.stderr)
        return 2
    except ValidationError as e:
        lines = "\n".join(f"  {join_path('request', tuple(x['loc'])) or 'request'}: {x['msg']}" for x in e.errors())
        print(f"rollflow_engines check: unusable request:\n{lines}", file=sys.stderr)
        return 2
    problems = check(request)
    print(json.dumps({"ok": not problems, "problems": problems}, default=repr))
    return 1 if problems else 0
