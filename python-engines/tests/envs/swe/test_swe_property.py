"""Property: whatever state the agent leaves the repository in, grading answers with a grade, never an exception.

The grading reads each base file back from the episode's workspace (grading.py, step 2); hypothesis shapes
that workspace with commands a policy could send (base files turned into links, FIFOs, directories, huge or
unreadable files, the package or the tests gone) and then submits. The bug of tally__tally-1 is left in, so
every grade is 0; the episode closes and leaves no workspace.
"""
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers import bash, play

SHAPES = [
    "ln -sf /etc/passwd tally/stats.py", "rm tally/text.py && mkfifo tally/text.py", "rm -rf tally && touch tally",
    "rm -rf tally && ln -s /tmp tally", "head -c 5000000 /dev/zero > tally/units.py", "chmod 000 tally/stats.py", "chmod 000 tally",
    "rm tally/stats.py && mkdir tally/stats.py", "rm -rf tests", "ln -s loop loop", "mkfifo tests/conftest.py",
    "printf 'x\\377\\376' > tally/__init__.py", "mkdir many && cd many && seq 300 | xargs touch", "ln -sf ../README.md tally/units.py",
    "rm tests/conftest.py && ln -s /etc/passwd tests/conftest.py", "mkdir -p .git/hooks && echo x > .git/config",
]


@settings(max_examples=int(os.environ.get("ROLLFLOW_PROPERTY_EXAMPLES", 12)), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(shapes=st.lists(st.sampled_from(SHAPES), min_size=1, max_size=4))
def test_grading_answers_every_workspace_state(built, sandbox_root, shapes):
    end = play(built, "tally__tally-1", [bash(s) for s in shapes] + ["<submit/>"], command_timeout_s=5, grading_timeout_s=60)[-1]
    assert end.done and end.reward == 0.0 and end.info["submitted"], (shapes, end)
    assert not sandbox_root.exists() or all(not any(owner.iterdir()) for owner in sandbox_root.iterdir())
