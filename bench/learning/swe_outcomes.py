"""What the model did in a learn-swe-mined run's validation episodes, per validation list: how its first reply fared
(a malformed reply, a file that does not exist, text the file does not hold, an edit) and whether the edit is the
gold fix (the mutated line as the gold patch writes it; a test-equivalent other fix would count as not).

    .venv/bin/python bench/learning/swe_outcomes.py runs/learn-swe-mined/samples/<run id> [--config examples/learn-swe-mined.yaml]

reads the trajectories the run stored (val<k>-<tag>-g<i>-s<j>.json: k the k-th validation) and prints one table row
per validation and tag. The rewards themselves are the run's validation.jsonl; this says why they are what they are.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python-engines"))

from rollflow_engines.envs.swe.env import SweConfig  # noqa: E402
from rollflow_engines.envs.swe.instances import load_dataset, select  # noqa: E402
from rollflow_engines.envs.swe.sources import resolve  # noqa: E402
from rollflow_engines.envs.swe_lite.actions import Replace, parse_action  # noqa: E402
from rollflow_engines.models.warmstart_swe_mined import base_text, mutated_line  # noqa: E402

NAME = re.compile(r"val(\d+)-(.+)-g\d+-s\d+\.json")
OUTCOMES = ("malformed", "wrong or missing file", "text not in file", "edit, not the fix", "the gold fix")


def gold_lines(envs: dict) -> dict[str, tuple[str, str, str]]:
    """instance id -> (file, buggy line, fixed line), for every instance the config's envs name."""
    out = {}
    for env in envs.values():
        config = SweConfig.model_validate(env["env_config"])
        for instance in select(load_dataset(config.instances, config.format, config.fields, True), config.split, config.ids):
            path = next(line[6:] for line in instance.patch.splitlines() if line.startswith("+++ b/"))
            checkout, _ = resolve(config.source, instance)
            out[instance.instance_id] = (path, base_text(checkout, path), *mutated_line(instance.patch))
    return out


def outcome(messages: list[dict], gold: tuple[str, str, str, str]) -> tuple[str, str]:
    """(what became of the first reply, the path it named)."""
    path, text, buggy, fixed = gold
    action = parse_action(messages[1]["content"])
    said = messages[2]["content"] if len(messages) > 2 else ""
    named = action.path if isinstance(action, Replace) else ""
    if not isinstance(action, Replace) or said.startswith("Invalid action"):
        return "malformed", named
    if "does not exist" in said or named != path:
        return "wrong or missing file", named
    if not said.startswith("Replaced"):
        return "text not in file", named
    after = text.replace(action.old, action.new)
    return ("the gold fix" if buggy not in after.splitlines() and fixed in after.splitlines() else "edit, not the fix"), named


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("samples", type=Path, help="runs/<exp>/samples/<run id>")
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "learn-swe-mined.yaml")
    args = parser.parse_args()
    envs = yaml.safe_load(args.config.read_text())["custom_envs"]
    gold = gold_lines(envs)
    train_paths = {gold[i][0] for i in envs["swe_train"]["env_config"]["ids"]}
    table: dict[tuple[int, str], collections.Counter] = collections.defaultdict(collections.Counter)
    for file in sorted((args.samples / "trajectories").glob("val*.json")):
        k, tag = NAME.fullmatch(file.name).groups()
        messages = json.loads(file.read_text())["messages"]
        first = messages[0]["content"]
        what, named = outcome(messages, gold[first.split(".", 1)[0].removeprefix("Task ")])
        table[int(k), tag][what] += 1
        table[int(k), tag]["named a training file"] += named in train_paths
    print("| validation | list | episodes | " + " | ".join(OUTCOMES) + " | named a training task's file |")
    print("|---:|---|---:|" + "---:|" * (len(OUTCOMES) + 1))
    for (k, tag), c in sorted(table.items()):
        print(f"| {k} | {tag} | {sum(c[o] for o in OUTCOMES)} | " + " | ".join(str(c[o]) for o in OUTCOMES) + f" | {c['named a training file']} |")


if __name__ == "__main__":
    main()
