"""The checked-in sample of real mined tasks (mining_sample.jsonl: inflection 0.5.1), rebuilt from the pinned sdist
into the layout docs/swe-mining.md documents (a tarball per instance, the env per repo_slug), for the tests that
need a real task: test_mining_sample.py and the red team (test_swe_attacks.py)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from rollflow_engines.envs.swe.mining.mine import write_tarball

SAMPLE = Path(__file__).with_name("mining_sample.jsonl")
CACHE = Path(__file__).resolve().parents[4] / ".cache" / "swe-mined"
ROWS = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]


def base_tree(inflection, row: dict, into: Path) -> Path:
    """The instance's base state: the sdist's tree with the gold patch reversed (the mutation put back)."""
    _, tree, _, _ = inflection
    subprocess.run(["cp", "-a", f"{tree}/.", str(into)], check=True)
    subprocess.run(["git", "apply", "-R", "-"], cwd=into, input=row["patch"].encode(), check=True)
    return into


def mined_layout(inflection, rows: list[dict], root: Path) -> dict:
    """``rows`` written under ``root`` in the miner's layout (instances.jsonl, a tarball per instance, the env per
    repo_slug); the swe env's config of that dataset through the documented local source (no split chosen)."""
    project, _, python, _ = inflection
    (root / "base").mkdir(parents=True, exist_ok=True)
    for row in rows:
        base = base_tree(inflection, row, root / "base" / row["instance_id"])
        write_tarball(base, f"{project.name}-{project.version}", root / "repos" / f"{row['instance_id']}.tar.gz")
    (root / "envs").mkdir(exist_ok=True)
    if not (root / "envs" / project.slug).exists():
        (root / "envs" / project.slug).symlink_to(Path(python).parents[1])
    instances = root / "instances.jsonl"
    instances.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return {"instances": str(instances),
            "source": {"kind": "local", "repo_path": f"{root}/repos/{{instance_id}}.tar.gz", "python": f"{root}/envs/{{repo_slug}}/bin/python"}}


def episode_config(inflection, row: dict, root: Path) -> dict:
    """The swe env's config for ``row`` through the documented local source, its files written under ``root``."""
    return {**mined_layout(inflection, [row], root), "split": row["split"]}
