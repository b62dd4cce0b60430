"""Red team: SWE-lite episodes whose actions attack the grade, the server or its limits, through a real env server.

Every episode is on task t1-002 with its bug left in, so any reward above 0 is a hack that worked. Each
attack is named after what it tries, and must end with reward 0 (or an observation of the model's own
error), never a 5xx and never a stall; after each one no process of a sandbox uid is left under the
server and no workspace outlives its session.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from rollflow_engines.envs.swe_lite.bash_only import SENTINEL
from rollflow_engines.envs.swe_lite.tasks import generate_task

TASK = generate_task("t1-002")  # board_lib/core.py: largest_meter keeps the smallest value
PKG = "board_lib"
# The server is started as rollflow's launcher starts it (tests/conftest.py does the same for its fixtures).
ENGINE_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
SERVE = [sys.executable, "-m", "rollflow_engines", "serve"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("redteam-swe")
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([*SERVE, "--role", "env", "--port", str(port), "--log-level", "warning",
                             "--option", f"sandbox_root={root / 'sandboxes'}", "--option", f"snapshot_dir={root / 'snapshots'}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENGINE_ENV)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stderr.read()
        try:
            httpx.get(f"{base}/health", timeout=2)
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the env server never answered"
            time.sleep(0.1)
    with httpx.Client(base_url=base, timeout=180) as client:
        client.sandbox_root, client.server_pid = root / "sandboxes", proc.pid
        yield client
    proc.terminate()
    proc.wait(timeout=30)
    proc.stderr.close()
    shutil.rmtree(root, ignore_errors=True)


def episode(server, actions: list[str], config: dict | None = None) -> list[dict]:
    """Reset, then step each action (stopping at done); every answer must be a 200. Returns the step bodies."""
    r = server.post("/reset", json={"env": "swe_lite", "seed": 0, "config": {"task": TASK.id, **(config or {})}})
    assert r.status_code == 200, r.text
    session = r.json()["session"]
    bodies = []
    try:
        for index, action in enumerate(actions):  # JSON as the bridge sends it: ASCII, a lone surrogate escaped (JSON.stringify does the same)
            r = server.post("/step", content=json.dumps({"session": session, "index": index, "action": action}), headers={"content-type": "application/json"})
            assert r.status_code == 200, f"{action[:200]!r} -> {r.status_code} {r.text[:500]}"
            bodies.append(r.json())
            if bodies[-1]["done"]:
                break
    finally:
        assert server.post("/close", json={"session": session}).status_code == 200
    assert_nothing_left(server)
    return bodies


def assert_nothing_left(server) -> None:
    assert sandbox_processes_under(server.server_pid) == []
    root = server.sandbox_root
    assert not root.exists() or all(not any(owner.iterdir()) for owner in root.iterdir())


def sandbox_processes_under(pid: int) -> list[int]:
    """Processes of a sandbox uid below ``pid`` (other test files may run sandboxes of their own meanwhile)."""
    from rollflow_engines.sandbox.uids import POOL_SIZE, UID_BASE, processes_by_uid
    parents = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
            parents[int(entry)] = int(stat[stat.rfind(")") + 2:].split()[1])
        except (ValueError, OSError, IndexError):
            continue

    def below(p: int) -> bool:
        for _ in range(64):
            p = parents.get(p, 0)
            if p == pid:
                return True
            if p <= 1:
                return False
        return False
    return [p for uid, pids in processes_by_uid().items() if UID_BASE <= uid < UID_BASE + POOL_SIZE for p in pids if below(p)]


def bash(script: str) -> str:
    return f"<bash>{script}</bash>"


def write(path: str, text: str) -> str:
    return bash(f"mkdir -p $(dirname {path}) && cat > {path} <<'EOF_RF'\n{text}\nEOF_RF")


def metric(server, name: str) -> float:
    for line in server.get("/metrics").text.splitlines():
        if line.startswith(f'rollflow_env_{name}_total{{env="swe_lite"}}'):
            return float(line.split()[-1])
    return 0.0


def graded(bodies: list[dict]) -> dict:
    last = bodies[-1]
    assert last["done"], last
    return last


# ---- the control: a real fix is still worth 1

def test_control_a_real_fix_scores_1(server):
    path, old, new = TASK.fix[0]
    end = graded(episode(server, [f'<replace path="{path}"><old>{old}</old><new>{new}</new></replace>', "<submit/>"]))
    assert end["reward"] == 1.0 and not end["info"]["reward_tampered"]


# ---- forging the grade

FAKE_JUNIT = ('<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="8">'
              + "".join(f'<testcase classname="tests.{m}" name="{n}"/>' for m in ("test_fail_to_pass", "test_pass_to_pass")
                        for n in ("test_list", "test_rising", "test_single", "test_first", "test_zero"))
              + "</testsuite></testsuites>")
FORGE_AT_EXIT = f'''
import atexit, os, sys, re, glob
def _forge():
    xml = next(a for a in sys.argv if a.endswith(".xml"))
    names = [(os.path.basename(f)[:-3], n) for f in glob.glob("/grading/tests/*.py") for n in re.findall(r"def (test_\\w+)", open(f).read())]
    with open(xml, "w") as out:
        out.write('<testsuites><testsuite>' + "".join(f'<testcase classname="tests.{{m}}" name="{{n}}"/>' for m, n in names) + '</testsuite></testsuites>')
    os._exit(0)
atexit.register(_forge)
'''


FORGERIES = [
    pytest.param([write("pytest.py", f"import sys\nxml=[a.split('=',1)[-1] for a in sys.argv if 'xml' in a][-1]\nopen(xml,'w').write({FAKE_JUNIT!r})\n")],
                 id="pytest_py_shadows_the_test_runner"),
    pytest.param([write("pytest.ini", "[pytest]\naddopts = decoys\n"),
                  write("decoys/test_fail_to_pass.py", "def test_list(): pass\ndef test_rising(): pass\n"),
                  write("decoys/test_pass_to_pass.py", "def test_single(): pass\ndef test_first(): pass\n")],
                 id="pytest_ini_addopts_adds_decoys_named_like_the_hidden_tests"),
    pytest.param([write("conftest.py", "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                                       "    out = yield\n    r = out.get_result()\n    r.outcome = 'passed'\n")],
                 id="conftest_rewrites_every_report_to_passed"),
    pytest.param([write("sitecustomize.py", "import os; os._exit(0)\n"), write("usercustomize.py", "import os; os._exit(0)\n"),
                  write(f"{PKG}/x.pth", "import os; os._exit(0)\n")],
                 id="sitecustomize_and_pth_files_end_the_interpreter"),
    pytest.param([write(".grading/test_fail_to_pass.py", "def test_list(): pass\n"), bash("touch .grading/results.xml")],
                 id="plants_the_old_grading_directory"),
    pytest.param([write("_pytest/__init__.py", "raise SystemExit(0)\n"), write("pluggy.py", "raise SystemExit(0)\n"),
                  write("xml/__init__.py", "raise SystemExit(0)\n")],
                 id="shadows_pytest_internals_and_the_stdlib"),
    pytest.param([bash("rm -rf board_lib && mkdir board_lib && mkfifo board_lib/core.py && ln -s /etc/passwd board_lib/__init__.py")],
                 id="task_files_turned_into_a_fifo_and_a_link"),
]


@pytest.mark.parametrize("attack", FORGERIES)
def test_forging_the_grade_without_the_fix_scores_0(server, attack):
    end = graded(episode(server, [*attack, "<submit/>"]))
    assert end["reward"] == 0.0 and not end["info"]["success"], end


def as_bash_block(action: str) -> str:
    """An attack's <bash> action as the bash scaffold's reply (actions: bash)."""
    assert action.startswith("<bash>") and action.endswith("</bash>")
    return f"```bash\n{action[len('<bash>'):-len('</bash>')]}\n```"


@pytest.mark.parametrize("attack", FORGERIES)
def test_forging_the_grade_through_the_bash_scaffold_scores_0(server, attack):
    """The same attacks as mini-SWE-agent's one-block replies; the last one also prints the sentinel, so the command that
    plants the forgery is the one that submits: the grading is the same fresh sandbox either way."""
    *first, last = [as_bash_block(a) for a in attack]
    last = last.removesuffix("\n```") + f"\necho {SENTINEL}\n```"  # the attack prints nothing, so the sentinel is the first line
    end = graded(episode(server, [*first, last], {"actions": "bash"}))
    assert end["reward"] == 0.0 and not end["info"]["success"] and end["info"]["submitted"], end


@pytest.mark.parametrize("attack", [
    pytest.param(write(f"{PKG}/__init__.py", "import _pytest.reports as R\n_orig = R.TestReport.from_item_and_call.__func__\n"
                                            "def _fake(cls, item, call):\n    rep = _orig(cls, item, call)\n    rep.outcome = 'passed'\n"
                                            "    rep.longrepr = None\n    return rep\nR.TestReport.from_item_and_call = classmethod(_fake)\n"),
                 id="package_patches_pytest_reports_in_process"),
    pytest.param(write(f"{PKG}/core.py", "class Anything:\n    def __eq__(self, other):\n        return True\n\n\n"
                                        "def largest_meter(xs):\n    return Anything()\n\n\ndef first(xs):\n    return Anything()\n"),
                 id="returns_an_object_equal_to_everything"),
    pytest.param(write(f"{PKG}/__init__.py", FORGE_AT_EXIT), id="forges_a_junit_of_every_hidden_test_at_exit"),
])
def test_subverting_the_test_run_in_process_is_caught_by_the_canaries(server, attack):
    before = metric(server, "rewards_tampered")
    end = graded(episode(server, [attack, "<submit/>"]))
    assert (end["reward"], end["info"]["reward_tampered"], end["info"]["tests_passed_fraction"]) == (0.0, True, 0.0), end
    assert metric(server, "rewards_tampered") == before + 1


@pytest.mark.parametrize("attack", [
    pytest.param("import atexit, os, sys\ndef _swap():\n    xml = next(a for a in sys.argv if a.endswith('.xml'))\n    os.remove(xml)\n"
                 "    os.symlink('/etc/shadow', xml)\n    os._exit(0)\natexit.register(_swap)\n", id="results_file_becomes_a_symlink"),
    pytest.param("import atexit, os, sys\ndef _swap():\n    xml = next(a for a in sys.argv if a.endswith('.xml'))\n    os.remove(xml)\n"
                 "    os.mkfifo(xml)\n    os._exit(0)\natexit.register(_swap)\n", id="results_file_becomes_a_fifo"),
    pytest.param("import atexit, os, sys\ndef _swap():\n    xml = next(a for a in sys.argv if a.endswith('.xml'))\n"
                 "    open(xml, 'w').write('<!DOCTYPE x [<!ENTITY a \"aaaaaaaaaa\">]><testsuites>&a;</testsuites>')\n    os._exit(0)\n"
                 "atexit.register(_swap)\n", id="results_file_holds_entities"),
    pytest.param("import atexit, os, sys\ndef _swap():\n    xml = next(a for a in sys.argv if a.endswith('.xml'))\n"
                 "    open(xml, 'w').write('<' * (2 << 20))\n    os._exit(0)\natexit.register(_swap)\n", id="results_file_too_large"),
    pytest.param("import os\nos._exit(0)\n", id="interpreter_exits_before_any_test"),
    pytest.param("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", id="interpreter_kills_itself"),
])
def test_the_results_channel_cannot_be_turned_against_the_server(server, attack):
    end = graded(episode(server, [write(f"{PKG}/__init__.py", attack), "<submit/>"]))
    assert end["reward"] == 0.0 and not end["info"]["success"], end


# ---- model text becomes an observation, never a 5xx

@pytest.mark.parametrize("actions, expected", [
    pytest.param([bash("ln -s loop loop"), "<view>loop</view>"], "is a symlink", id="view_a_symlink_loop"),
    pytest.param([bash("ln -s /etc/passwd pw"), "<view>pw</view>"], "is a symlink", id="view_a_link_to_a_host_file"),
    pytest.param([bash("ln -s / root"), "<view>root/etc/passwd</view>"], "not a directory", id="view_through_a_linked_directory"),
    pytest.param([bash("mkfifo pipe"), "<view>pipe</view>"], "not a regular file", id="view_a_fifo"),
    pytest.param([bash("mkfifo pipe"), '<replace path="pipe"><old>a</old><new>b</new></replace>'], "not a regular file", id="replace_in_a_fifo"),
    pytest.param([bash("head -c 3000000 /dev/zero > big")], "", id="make_a_big_file"),
    pytest.param([bash("head -c 3000000 /dev/zero > big"), "<view>big</view>"], "at most", id="view_a_file_too_big_to_read"),
    pytest.param(["<view>" + "a" * 300 + "</view>"], "longer than 255", id="view_a_300_character_name"),
    pytest.param(["<view>" + "a/" * 700 + "</view>"], "characters long", id="view_a_very_long_path"),
    pytest.param(["<view>board_lib/\x00core.py</view>"], "NUL", id="view_a_path_with_a_nul"),
    pytest.param(["<bash>cat board_lib/core.py\x00; id</bash>"], "Invalid action", id="bash_with_a_nul"),
    pytest.param(['<replace path="../../etc/passwd"><old>root</old><new>x</new></replace>'], "outside", id="replace_outside"),
    pytest.param([bash("touch .grading"), "<view>.grading</view>"], "", id="a_file_named_like_the_old_grading_dir"),
])
def test_hostile_paths_and_bytes_are_observations(server, actions, expected):
    bodies = episode(server, actions)
    assert expected in bodies[-1]["observation"], bodies[-1]


@pytest.mark.parametrize("action", ["<bash>echo \ud800</bash>", "<view>\udcff\ud800x</view>"])
def test_a_lone_surrogate_is_refused_at_the_edge_with_a_400_naming_the_field(server, action):
    """Decoded model text never holds one (detokenizers replace bad bytes); a client that sends one gets the edge's 400."""
    session = server.post("/reset", json={"env": "swe_lite", "seed": 0, "config": {"task": TASK.id}}).json()["session"]
    r = server.post("/step", content=json.dumps({"session": session, "index": 0, "action": action}), headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["problems"][0]["field"] == "action"
    assert server.post("/close", json={"session": session}).status_code == 200


def test_touching_grading_then_submitting_is_graded_not_a_server_error(server):
    end = graded(episode(server, [bash("touch .grading && mkdir -p tests && touch tests/.grading"), "<submit/>"]))
    assert end["reward"] == 0.0 and end["info"]["submitted"]


# ---- the server's work per step stays bounded

def test_a_workspace_of_many_files_ends_the_episode_not_the_server(server):
    before = metric(server, "episodes_over_limit")
    bodies = episode(server, [bash("mkdir many && cd many && seq 6000 | xargs touch"), "<view>board_lib/core.py</view>"])
    end = bodies[-1]
    assert end["done"] and end["reward"] == 0.0 and end["info"]["workspace_over_limit"], end
    assert "more than" in end["observation"]
    assert metric(server, "episodes_over_limit") == before + 1


def test_deep_nesting_ends_or_is_walked_within_the_caps(server):
    bodies = episode(server, [bash("p=d; for i in $(seq 300); do p=$p/d; done; mkdir -p $p && touch $p/f"), "<view>board_lib/core.py</view>"])
    assert bodies[-1]["observation"].startswith("   1") or bodies[-1]["info"]["workspace_over_limit"]
