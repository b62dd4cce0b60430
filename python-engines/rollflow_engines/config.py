"""Server configuration: from command-line flags or a YAML file, validated on start.

A bad value is reported with its key, the value given and what was expected,
and the process exits with status 2 before anything binds a port.
"""
from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Role = Literal["inference", "trainer", "env"]

# Which backends each role accepts; the GPU backends are import-guarded.
BACKENDS_BY_ROLE: dict[str, tuple[str, ...]] = {
    "inference": ("sim", "torch", "vllm"),
    "trainer": ("sim", "torch", "megatron"),
    "env": ("python",),
}
DEFAULT_BACKEND = {"inference": "sim", "trainer": "sim", "env": "python"}


class ServeConfig(BaseModel):
    """What one engine server needs to start."""

    model_config = ConfigDict(extra="forbid")

    role: Role = Field(description="Which engine this server is: inference, trainer or env.")
    backend: str | None = Field(default=None, description="Implementation of the role; defaults per role.")
    host: str = Field(default="127.0.0.1", description="Interface to bind; loopback unless you mean otherwise.")
    port: int = Field(default=8300, ge=1, le=65535, description="TCP port to bind.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(default="info", description="Server log level.")
    options: dict[str, Any] = Field(default_factory=dict, description="Role and backend settings, validated by the role's Options model.")

    @model_validator(mode="after")
    def _backend_fits_role(self) -> "ServeConfig":
        allowed = BACKENDS_BY_ROLE[self.role]
        if self.backend is None:
            self.backend = DEFAULT_BACKEND[self.role]
        elif self.backend not in allowed:
            raise ValueError(f"backend: got {self.backend!r}; expected one of {', '.join(allowed)} for role {self.role!r}")
        return self


class ConfigError(Exception):
    """Thrown when a server config is invalid; the message lists every problem."""


def describe_errors(err: ValidationError, prefix: str = "") -> str:
    lines = []
    for e in err.errors():
        path = prefix + ".".join(str(p) for p in e["loc"]) or "(config)"
        given = e.get("input")
        lines.append(f"  {path}: {e['msg']} (given: {given!r})")
    return "invalid engine server config:\n" + "\n".join(lines)


def parse_option_flags(flags: list[str]) -> dict[str, Any]:
    """["max_batch=8", "lengths.mean=100"] -> {"max_batch": 8, "lengths": {"mean": 100}}; values read as YAML."""
    options: dict[str, Any] = {}
    for flag in flags:
        key, sep, value = flag.partition("=")
        if not sep or not key:
            raise ConfigError(f"--option {flag!r}: expected key=value")
        node = options
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(value)
    return options


def role_options_input(role: ModuleType, backend: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """What a role's Options model validates: the options, plus the backend when the model has that field."""
    return {"backend": backend, **options} if "backend" in role.Options.model_fields else options


def validate_role_options(config: ServeConfig) -> BaseModel:
    """The role's own Options model, built from config.options; ConfigError names each bad key."""
    from .roles import load_role

    role = load_role(config.role)
    try:
        return role.Options.model_validate(role_options_input(role, config.backend, config.options))
    except ValidationError as e:
        raise ConfigError(describe_errors(e, prefix="options.")) from e


def load_config(file: str | None, overrides: dict[str, Any], option_flags: list[str] | None = None) -> ServeConfig:
    """Merge a YAML file (if any) with flag overrides (flags win) and validate, role options included."""
    data: dict[str, Any] = {}
    if file:
        path = Path(file)
        try:
            loaded = yaml.safe_load(path.read_text())
        except OSError as e:
            raise ConfigError(f"cannot read config file {file}: {e.strerror}") from e
        except yaml.YAMLError as e:
            raise ConfigError(f"config file {file} is not valid YAML: {e}") from e
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config file {file}: expected a mapping of keys, got {type(loaded).__name__}")
        data.update(loaded or {})
    data.update({k: v for k, v in overrides.items() if v is not None})
    flags = parse_option_flags(option_flags or [])
    if flags:
        data["options"] = _merge(dict(data.get("options") or {}), flags)
    try:
        config = ServeConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(describe_errors(e)) from e
    validate_role_options(config)
    return config


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    for k, v in extra.items():
        base[k] = _merge(dict(base.get(k) or {}), v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return base
