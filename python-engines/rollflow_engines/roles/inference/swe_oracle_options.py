"""The options of the scripted SWE policy (``options.sim.policy: {kind: swe_oracle, ...}``): swe_lite's solver and
flailer (swe_oracle.py), and for the swe env the dataset of gold patches and a solver's noise (swe_gold.py). A
module of its own so both read it without importing each other."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...envs.swe.instances import Fields


class SweOracleOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["swe_oracle"] = "swe_oracle"
    solve_prob: float = Field(default=0.5, ge=0, le=1, description="Share of episodes the policy solves.")
    solve_after_turns: int = Field(default=2, ge=0, le=40, description="Turns a solver explores before it edits.")
    flail_turns: int = Field(default=6, ge=1, le=50, description="Turns a flailer acts before it submits.")
    invalid_prob: float = Field(default=0.2, ge=0, le=1, description="A flailer's chance per turn of an unreadable reply.")
    # The swe env (swe_gold.py): where the gold patches are, and a solver's noise, each drawn once per episode.
    instances: str | None = Field(default=None, min_length=1, description="The swe episodes' dataset (JSON lines or parquet, the env's "
                                                                          "env_config.instances): its gold patches are what a solver applies. "
                                                                          "Without it swe episodes are submitted at once.")
    format: Literal["auto", "jsonl", "parquet"] = Field(default="auto", description="How instances is read, as the swe env's format.")
    fields: Fields = Field(default_factory=Fields, description="The columns of instances, as the swe env's env_config.fields.")
    wrong_file_prob: float = Field(default=0, ge=0, le=1, description="swe: chance a solver first views an unrelated file of the listing.")
    failed_edit_prob: float = Field(default=0, ge=0, le=1, description="swe: chance a solver first sends an edit whose old text does not match.")
    wasted_command_prob: float = Field(default=0, ge=0, le=1, description="swe: chance a solver runs a command that changes nothing (ls, the tests).")
