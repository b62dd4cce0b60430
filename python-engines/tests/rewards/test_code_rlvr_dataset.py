"""examples/data/code-rlvr.jsonl: current with its generator, and every row solvable: the task's reference
solution scores 1 under code_exec in the sandbox, and a wrong one scores 0."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from rollflow_engines.rewards.code_exec import CodeExecConfig, parse_reference, verify_code
from rollflow_engines.sandbox import SandboxSettings, configure, current

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
spec = importlib.util.spec_from_file_location("make_code_rlvr", EXAMPLES / "data" / "make_code_rlvr.py")
make = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = make  # its dataclasses look their module up
spec.loader.exec_module(make)
ROWS = [json.loads(line) for line in (EXAMPLES / "data" / "code-rlvr.jsonl").read_text().splitlines()]
SOLUTIONS = {task.name: task.solution for task in make.TASKS}


@pytest.fixture(autouse=True, scope="module")
def sandbox(tmp_path_factory):
    before = current()
    configure(SandboxSettings(root=tmp_path_factory.mktemp("sandboxes")))
    yield
    configure(before)


def test_the_file_is_what_the_generator_writes():
    assert (EXAMPLES / "data" / "code-rlvr.jsonl").read_text() == make.render()
    assert len(ROWS) == 40
    assert {parse_reference(r["answer"]).style for r in ROWS} == {"stdio", "call"}
    assert all(r["domain"] == "code" and "```python" in r["prompt"] for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_every_row_is_solved_by_its_reference_solution(row):
    solution = SOLUTIONS[row["id"].rsplit("-", 1)[0]]
    reply = f"Here is my solution.\n```python\n{solution}```\n"
    reward, info = verify_code(row["prompt"], reply, row["answer"], CodeExecConfig().model_dump(), 60)
    assert reward == 1.0, info
    assert verify_code(row["prompt"], "print('no')", row["answer"], CodeExecConfig().model_dump(), 60)[0] == 0.0
