"""Every fixture in contracts/ validates with the pydantic model of its name and
round-trips unchanged, and every model has a fixture: the Python half of the
TS <-> Python contract check (tests/unit/contracts.test.ts is the other)."""
import importlib
import json
from pathlib import Path

import pytest

from rollflow_engines.roles import ROLE_PACKAGES

CONTRACTS = Path(__file__).resolve().parents[2] / "contracts"


def models_of(role: str) -> dict:
    return importlib.import_module(f"{ROLE_PACKAGES[role]}.contracts").CONTRACT_MODELS


FIXTURES = [(role, f) for role in ROLE_PACKAGES for f in sorted((CONTRACTS / role).glob("*.json"))]


@pytest.mark.parametrize("role", list(ROLE_PACKAGES))
def test_every_model_has_a_fixture_and_every_fixture_a_model(role):
    names = {f.name.split(".")[0] for f in (CONTRACTS / role).glob("*.json")}
    assert sorted(set(models_of(role)) - names) == [], "models without a fixture"
    assert sorted(names - set(models_of(role))) == [], "fixtures without a model"


@pytest.mark.parametrize("role, fixture", FIXTURES, ids=[f"{r}/{f.name}" for r, f in FIXTURES])
def test_fixture_validates_and_round_trips(role, fixture):
    model = models_of(role)[fixture.name.split(".")[0]]
    data = json.loads(fixture.read_text())
    parsed = model.model_validate(data)
    assert parsed.model_dump(mode="json", exclude_unset=True) == data
