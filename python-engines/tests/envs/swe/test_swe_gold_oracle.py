"""The scripted oracle on the swe env (roles/inference/swe_gold.py), against the real env, sandbox and grading of the
tally project: it resolves every instance in both protocols, with and without its noise (which its transcripts show),
a flailer and a no-op policy score 0, its replies repeat from the seed, a patch str_replace cannot say (a new file, a
hunk whose text occurs twice) goes through git apply, and an instance its dataset lacks is a 400 naming it."""
import difflib
import random
import shutil

import pytest

from rollflow_engines.envs.swe.env import SweEnv
from rollflow_engines.envs.swe.instances import Instance
from rollflow_engines.envs.swe_lite.actions import Replace, parse_action
from rollflow_engines.envs.swe_lite.tool_calls import parse_hermes
from rollflow_engines.errors import RequestError
from rollflow_engines.roles.inference import oracle_episode, swe_gold, swe_oracle
from rollflow_engines.roles.inference.gold_patch import split_patch
from rollflow_engines.roles.inference.engine import SamplingParams
from rollflow_engines.roles.inference.metrics import InferenceMetrics
from rollflow_engines.roles.inference.options import Options
from rollflow_engines.roles.inference.sim import SimEngine

from .helpers import config, write_rows
from .project import BUGS, FILES, _edited

PARAMS = SamplingParams(max_tokens=512)
NOISE = {"wrong_file_prob": 1.0, "failed_edit_prob": 1.0, "wasted_command_prob": 1.0}


def play(built, instance_id: str, actions: str = "xml", seed: int = 3, instances=None, **policy):
    """One episode (oracle_episode.play): the last step's result, the replies and the observations."""
    policy = {"kind": "swe_oracle", "solve_prob": 1.0, "instances": str(instances or built.instances_path), **policy}
    cfg = config(built, instance_id, actions=actions, max_turns=20, **({"instances": str(instances)} if instances else {}))
    episode = oracle_episode.play(SweEnv(), cfg, policy, seed, max_turns=20)
    return episode.end, episode.replies, episode.observations


@pytest.mark.parametrize("actions", ["xml", "tool_calls"])
@pytest.mark.parametrize("instance_id", list(BUGS))
def test_the_oracle_resolves_every_instance(built, instance_id, actions):
    end, replies, _ = play(built, instance_id, actions)
    assert (end.reward, end.info["success"], end.info["invalid_actions"]) == (1.0, True, 0), (end, replies)
    parse = parse_hermes if actions == "tool_calls" else parse_action
    assert [type(parse(r)).__name__ for r in replies] == ["View", "Replace", "Submit"], replies


@pytest.mark.parametrize("actions", ["xml", "tool_calls"])
@pytest.mark.parametrize("instance_id", list(BUGS))
def test_with_every_noise_it_still_resolves_and_the_transcript_shows_the_noise(built, instance_id, actions):
    end, replies, observations = play(built, instance_id, actions, **NOISE)
    assert (end.reward, end.info["invalid_actions"]) == (1.0, 0), (end, replies)
    parse = parse_hermes if actions == "tool_calls" else parse_action
    parsed = [parse(r) for r in replies]
    patched = {f.path for f in split_patch(built.row(instance_id)["patch"])}
    assert type(parsed[0]).__name__ == "View" and parsed[0].path not in patched  # the wrong file first
    assert parsed[0].path in observations[0]  # one the first observation listed
    refused = [n for n, a in enumerate(parsed) if isinstance(a, Replace) and observations[n + 1].startswith("Error: the old text occurs 0 times")]
    assert len(refused) == 1, observations
    wasted = [a.command for a in parsed if type(a).__name__ == "Bash"]
    assert len(wasted) == 1 and wasted[0] in swe_gold.WASTED_COMMANDS
    assert len(replies) == 6


def test_a_no_op_policy_and_a_flailer_score_0(built):
    for instance_id in BUGS:
        assert play(built, instance_id, solve_prob=0.0, flail_turns=4)[0].reward == 0.0
    # the swe_lite oracle without instances: it submits at once
    env = SweEnv()
    try:
        env.reset(0, config(built, "tally__tally-1"))
        assert env.step(swe_oracle.reply(swe_oracle.SweOracleOptions(), ["Task tally__tally-1 (tally/tally). Issue: x"], 1)).reward == 0.0
    finally:
        env.close()


def test_the_replies_repeat_from_the_seed_and_the_noise_varies_with_it(built):
    half = {k: 0.5 for k in NOISE}
    runs = {seed: play(built, "tally__tally-2", seed=seed, **half)[1] for seed in (1, 2, 1)}
    assert play(built, "tally__tally-2", seed=1, **half)[1] == runs[1]
    lengths = {len(play(built, "tally__tally-2", seed=s, **half)[1]) for s in range(4, 10)}
    assert len(lengths) > 1, lengths  # some episodes drew some noise, others other


def variant(built, tmp_path, name: str, base: str, patch: str):
    """A dataset of one instance: ``base``'s row and repository under a new id, with another form of its gold patch."""
    row = {**built.row(base), "instance_id": name, "patch": patch}
    for suffix in ("", ".tar.gz"):
        if (built.root / "repos" / (base + suffix)).exists():
            src, dest = built.root / "repos" / (base + suffix), built.root / "repos" / (name + suffix)
            if not dest.exists():
                (shutil.copytree if src.is_dir() else shutil.copyfile)(src, dest)
    return write_rows(tmp_path / f"{name}.jsonl", [row])


def diff(path: str, before: str, after: str, context: int) -> str:
    body = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}", n=context))
    return f"diff --git a/{path} b/{path}\n{body}"


@pytest.mark.parametrize("actions", ["xml", "tool_calls"])
def test_what_str_replace_cannot_say_goes_through_git_apply(built, tmp_path, actions):
    # tally-1 with no context: its removed line also ends a deeper-indented line, so the edit is refused (twice in the
    # file) and the oracle applies the hunk with git instead; a new file has no text to replace.
    path, fixed, buggy_line = BUGS["tally__tally-1"]["code"][0]
    buggy = _edited(FILES, [(path, fixed, buggy_line)])
    patch = diff(path, buggy[path], FILES[path], 0) + "diff --git a/tally/extra.py b/tally/extra.py\nnew file mode 100644\n" \
        "--- /dev/null\n+++ b/tally/extra.py\n@@ -0,0 +1,2 @@\n+def extra():\n+    return 1\n"
    data = variant(built, tmp_path, f"tally__tally-1-zero-{actions}", "tally__tally-1", patch)
    end, replies, observations = play(built, f"tally__tally-1-zero-{actions}", actions, instances=data)
    assert end.reward == 1.0, (replies, observations)
    assert "occurs 2 times" in observations[2] and observations[3] == observations[4] == "[exit 0]\napplied\n", observations


def test_two_hunks_are_two_edits(built, tmp_path):
    path = "tally/units.py"
    buggy = _edited(FILES, [(p, new, old) for p, new, old in BUGS["tally__tally-3"]["code"]])
    data = variant(built, tmp_path, "tally__tally-3-zero", "tally__tally-3", diff(path, buggy[path], FILES[path], 0))
    end, replies, _ = play(built, "tally__tally-3-zero", instances=data)
    assert end.reward == 1.0 and [type(parse_action(r)).__name__ for r in replies] == ["View", "Replace", "Replace", "Submit"], replies


def test_an_instance_the_dataset_lacks_is_a_400_naming_it(built, tmp_path):
    other = write_rows(tmp_path / "other.jsonl", [built.row("tally__tally-2")])
    engine = SimEngine(Options(backend="sim", sim={"policy": {"kind": "swe_oracle", "instances": str(other)}}), InferenceMetrics())
    prompt = engine.chat_prompt([{"role": "user", "content": "Task tally__tally-1 (tally/tally). Issue:\nmedian"}])
    with pytest.raises(RequestError, match="'tally__tally-1' .* is not among the 1 readable instances"):
        engine.check_request(prompt, PARAMS)
    no_patch = write_rows(tmp_path / "no-patch.jsonl", [{**built.row("tally__tally-1"), "patch": "no diff here\n"}])
    with pytest.raises(RequestError, match="'tally__tally-1': its gold patch cannot be applied by the oracle: the patch names no file"):
        SimEngine(Options(backend="sim", sim={"policy": {"kind": "swe_oracle", "instances": str(no_patch)}}), InferenceMetrics()).check_request(prompt, PARAMS)
    missing = SimEngine(Options(backend="sim", sim={"policy": {"kind": "swe_oracle", "instances": str(tmp_path / "nope.jsonl")}}), InferenceMetrics())
    with pytest.raises(RequestError, match="sim.policy.instances: cannot read"):
        missing.check_request(prompt, PARAMS)
    engine.check_request(engine.chat_prompt([{"role": "user", "content": "Task t1-000. Issue: x"}]), PARAMS)  # swe_lite: not its business


def test_a_refused_edit_of_the_plan_is_followed_by_git_apply_of_the_rest_of_that_file():
    """The plan walk alone: after an Error observation to the first of two hunks, both are applied with git."""
    path = "tally/units.py"
    buggy = _edited(FILES, [(p, new, old) for p, new, old in BUGS["tally__tally-3"]["code"]])
    patch = diff(path, buggy[path], FILES[path], 0)
    row = {"instance_id": "x", "repo": "r/r", "base_commit": "0", "problem_statement": "", "patch": patch, "test_patch": ""}
    instance = Instance(*row.values(), ("t.py::a",), ())
    steps = swe_gold.plan(instance, [], swe_oracle.SweOracleOptions(), random.Random(0))
    files = split_patch(patch)
    conv = ["Task x (r/r). Issue:", "v", "ok", "e1", "Error: the old text occurs 2 times in tally/units.py; it must occur exactly once."]
    action = swe_gold._solve(steps, files, conv)
    assert action.command.count("@@") == 4 and "git apply" in action.command  # both hunks' headers
    assert swe_gold._solve(steps, files, [*conv, "fallback", "[exit 0]\napplied"]).__class__.__name__ == "Submit"
