"""Wire types of the trainer role; contracts/trainer/*.json holds one fixture per type."""
from __future__ import annotations

from pydantic import BaseModel

CONTRACT_MODELS: dict[str, type[BaseModel]] = {}
