"""The scripted SWE-lite policy of the sim backend, against the real env and sandbox: at solve_prob 1
it solves tasks of every tier (reward 1), at 0 it never does, in both action protocols (XML, and tool
calls when the prompt carries the tools); its XML replies are those it gave before tool calls existed;
a reply decodes to the text the engine streams; the conversation and the tools are read back from the
sim's chat tokens as the engine sees them."""
import hashlib
import json
from collections import Counter

import pytest

from rollflow_engines.envs.swe_lite.actions import Invalid, parse_action
from rollflow_engines.envs.swe_lite.env import SweLiteConfig, SweLiteEnv
from rollflow_engines.envs.swe_lite.tool_calls import TOOLS, parse_hermes
from rollflow_engines.errors import RequestError
from rollflow_engines.roles.inference import swe_oracle
from rollflow_engines.roles.inference.metrics import InferenceMetrics
from rollflow_engines.roles.inference.options import Options
from rollflow_engines.roles.inference.engine import SamplingParams, Seq
from rollflow_engines.roles.inference.sim import SimEngine, conversation, open_reply, prompt_tools
from rollflow_engines.sandbox import SandboxSettings, configure, current

from .served_swe import served_solvers_and_flailers


@pytest.fixture(autouse=True)
def sandbox_root(tmp_path):
    before = current()
    configure(SandboxSettings(root=tmp_path / "sandboxes"))
    yield
    configure(before)


def play(task: str, solve_prob: float, seed: int, actions: str = "xml", invalid_prob: float = 0.2) -> tuple[float, int, int]:
    """One episode: the oracle answers what the engine's chat prompt says (its tools too, as the sim's _admit
    reads them); returns (reward, turns, invalid actions)."""
    policy = {"kind": "swe_oracle", "solve_prob": solve_prob, "invalid_prob": invalid_prob}
    engine = SimEngine(Options(backend="sim", sim={"policy": policy}), InferenceMetrics())
    env = SweLiteEnv()
    try:
        observation = env.reset(0, SweLiteConfig(task=task, max_turns=20, actions=actions))
        messages = env.first_messages(observation) or [{"role": "user", "content": observation}]
        for turn in range(20):
            prompt = engine.chat_prompt(messages)
            text = swe_oracle.reply(engine.sim.policy, conversation(prompt), seed, tools=prompt_tools(prompt))
            r = env.step(text)
            if r.done:
                return r.reward, turn + 1, r.info["invalid_actions"]
            # as the rollout sends it (rollout.ts observationRole): a tool result in a conversation with tools
            role = "tool" if messages[0]["role"] == "tools" else "user"
            messages += [{"role": "assistant", "content": text}, {"role": role, "content": r.observation}]
        raise AssertionError("the episode never ended")
    finally:
        env.close()


@pytest.mark.parametrize("actions", ["xml", "tool_calls"])
@pytest.mark.parametrize("task", ["t1-000", "t1-004", "t2-001", "t2-003", "t3-000", "t3-001", "t3-002"])
def test_at_solve_prob_1_it_solves_every_tier(task, actions):
    reward, _, invalid = play(task, 1.0, seed=5, actions=actions)
    assert reward == 1.0 and invalid == 0


@pytest.mark.parametrize("actions", ["xml", "tool_calls"])
@pytest.mark.parametrize("task", ["t1-000", "t2-001", "t3-002"])
def test_at_solve_prob_0_it_never_solves(task, actions):
    reward, turns, _ = play(task, 0.0, seed=5, actions=actions)
    assert reward == 0.0 and turns > 1


def test_a_flailers_malformed_calls_are_the_envs_invalid_actions():
    reward, turns, invalid = play("t2-001", 0.0, seed=5, actions="tool_calls", invalid_prob=1.0)
    assert reward == 0.0 and invalid == turns - 1  # every turn but the submit


# ---- the two protocols

def transcript(options, task: str, seed: int, tools=None, turns: int = 12) -> list[str]:
    """The policy's replies over ``turns`` turns, with a new request seed each turn as the sim draws them."""
    conv, out = [f"Task {task}. Issue: something"], []
    for t in range(turns):
        out.append(swe_oracle.reply(options, conv, seed * 7 + t, tools=tools))
        conv += [out[-1], f"observation {t}"]
    return out


VARIANTS = [swe_oracle.SweOracleOptions(), swe_oracle.SweOracleOptions(solve_after_turns=0, invalid_prob=0.6, flail_turns=9),
            swe_oracle.SweOracleOptions(solve_prob=0.9, solve_after_turns=4, flail_turns=3, invalid_prob=1.0)]
TASKS = [f"t{tier}-{i:03d}" for tier in (1, 2, 3) for i in range(0, 20, 3)]


def test_without_tools_the_replies_are_those_before_tool_calls_existed():
    """The digest of 3 option sets x 21 tasks x 6 seeds x 12 turns of replies, taken from swe_oracle.py as it was
    before tool calls (commit 00aa698): XML runs and their recorded results stay comparable byte for byte."""
    h = hashlib.sha256()
    for options in VARIANTS:
        for task in TASKS:
            for seed in range(6):
                for r in transcript(options, task, seed):
                    h.update(r.encode() + b"\0")
    h.update(swe_oracle.reply(swe_oracle.SweOracleOptions(), ["no task here"], 1).encode())
    assert h.hexdigest() == "86a428f49c921949f65eabbb9c801f15a1bd37566ee6428e93137afea09d7baa"
    # and a few in the clear, also as the old code wrote them (a flailer at seed 1, a solver at seed 2)
    assert transcript(VARIANTS[0], "t2-005", 1)[:3] == [
        'Let me poke around.\n<replace path="ledger_kit/core.py"><old>def </old><new>def </new></replace>',
        "Trying.\n<view>ledger_kit/core.py</view>", "Trying.\n<bash>python -m pytest -q</bash>"]
    assert transcript(VARIANTS[0], "t2-005", 2)[:4] == [
        "I will read the code, then fix it.\n<view>ledger_kit/util.py</view>", "Next.\n<view>ledger_kit/core.py</view>",
        'Next.\n<replace path="ledger_kit/util.py"><old>    return min(lo, max(x, hi))</old><new>    return max(lo, min(x, hi))</new></replace>',
        "Next.\n<submit/>"]


def test_with_tools_each_reply_is_the_tool_call_of_the_xml_reply():
    """The same plan and draws in both protocols: every call parses to the action of the XML reply at the same
    seed and turn, the thinking text around it is the same, and an unreadable XML reply is a malformed call."""
    compared = Counter()
    for options in VARIANTS:
        for task in TASKS:
            for seed in range(6):
                for xml, call in zip(transcript(options, task, seed), transcript(options, task, seed, tools=TOOLS), strict=True):
                    action = parse_hermes(call)
                    assert action == parse_action(xml) or isinstance(action, Invalid) and isinstance(parse_action(xml), Invalid), (xml, call)
                    cut = "<tool_call>" if "<tool_call>" in call else None
                    assert cut and xml[:xml.index("<")] == call[:call.index(cut)], (xml, call)
                    compared[type(action).__name__] += 1
    assert set(compared) == {"View", "Bash", "Replace", "Submit", "Invalid"}, compared


def test_the_malformed_calls_are_a_mix_of_the_faults_models_make():
    options = swe_oracle.SweOracleOptions(solve_prob=0, invalid_prob=1.0, flail_turns=50)
    faults = Counter()
    for seed in range(30):
        for call in transcript(options, "t1-003", seed, tools=TOOLS, turns=6):
            action = parse_hermes(call)
            assert isinstance(action, Invalid), call
            faults[next(k for k in ("not valid JSON", "not closed", "unknown tool", "missing argument") if k in action.why)] += 1
    assert len(faults) == 4 and min(faults.values()) >= 20, faults


def test_the_tools_are_read_from_the_head_of_every_turns_prompt():
    engine = SimEngine(Options(backend="sim", sim={"policy": {"kind": "swe_oracle"}}), InferenceMetrics())
    env = SweLiteEnv()
    try:
        first = env.first_messages(env.reset(0, SweLiteConfig(task="t1-002", actions="tool_calls")))
    finally:
        env.close()
    prompt = engine.chat_prompt(first)
    assert prompt_tools(prompt) == TOOLS and conversation(prompt) == [first[1]["content"]]
    # a later turn's prompt: the first, the reply's ids and eos, then the continuation's ids
    reply = [8 + b for b in "<tool_call>x</tool_call>".encode()] + [engine.eos_id]
    later = prompt + reply + engine.chat_continuation([*first, {"role": "assistant", "content": ""}], [{"role": "tool", "content": "[exit 0]"}])
    assert prompt_tools(later) == TOOLS and conversation(later) == [first[1]["content"], "<tool_call>x</tool_call>", "[exit 0]"]
    assert prompt_tools(engine.chat_prompt([first[1]])) is None  # an XML episode
    assert prompt_tools(engine.chat_prompt([{"role": "developer", "content": "[1, 2]"}, first[1]])) is None
    assert prompt_tools([]) is None


def test_the_sim_refuses_the_tools_messages_the_other_backends_refuse():
    engine = SimEngine(Options(backend="sim"), InferenceMetrics())
    tools, user = {"role": "tools", "content": json.dumps(TOOLS)}, {"role": "user", "content": "hi"}
    for messages, named in (([user, tools], "must be the first message"), ([{"role": "tools", "content": "nope"}, user], "not JSON")):
        with pytest.raises(RequestError, match=named):
            engine.chat_prompt(messages)
    with pytest.raises(RequestError, match="belongs first in the history"):
        engine.chat_continuation([tools, user, {"role": "assistant", "content": ""}], [tools, user])


def test_the_plan_is_drawn_per_seed_and_kept_across_turns():
    opts = swe_oracle.SweOracleOptions(solve_prob=0.5)
    first = {seed: swe_oracle.reply(opts, ["Task t1-000. Issue: x"], seed) for seed in range(40)}
    solvers = {s for s, text in first.items() if text.startswith(swe_oracle.SOLVER)}
    assert 5 < len(solvers) < 35  # both plans occur
    s = next(iter(solvers))
    later = swe_oracle.reply(opts, ["Task t1-000. Issue: x", first[s], "ok"], s + 1000)  # another seed at a later turn
    assert not later.startswith(swe_oracle.FLAILER)


def test_replies_stream_as_their_bytes_and_decode_back():
    engine = SimEngine(Options(backend="sim", sim={"policy": {"kind": "swe_oracle"}}), InferenceMetrics())
    text = "I will read the code, then fix it.\n<view>a/core.py</view>"
    ids = [8 + b for b in text.encode()] + [engine.eos_id]
    assert engine.decode(ids) == text


# ---- end to end, over HTTP: the env server and the sim inference server, as the bridge drives them

def test_served_tool_call_episodes_score_solvers_1_and_flailers_0_and_count_malformed_calls(tmp_path):
    outcomes = served_solvers_and_flailers(tmp_path, "tool_calls")
    for solver in outcomes[1.0]:
        assert solver["reward"] == 1.0 and solver["info"]["invalid_actions"] == 0 and solver["first_messages"][0]["role"] == "tools", solver
        assert all("<tool_call>" in r for r in solver["replies"]) and any('"name": "edit"' in r for r in solver["replies"])
    malformed = 0
    for flailer in outcomes[0.0]:
        assert flailer["reward"] == 0.0 and flailer["info"]["submitted"], flailer
        invalid = sum(isinstance(parse_hermes(r), Invalid) for r in flailer["replies"])
        assert flailer["info"]["invalid_actions"] == invalid, flailer  # the env counts each malformed call, and nothing else
        malformed += invalid
    assert malformed > 0  # at invalid_prob 0.5 over 3 x 5 turns, some were drawn


@pytest.mark.parametrize("cut", [1, 17])
@pytest.mark.parametrize("actions", ["xml", "tool_calls"])
@pytest.mark.anyio
async def test_a_continued_reply_goes_on_where_the_cut_left_it(cut, actions):
    # A generation cut short (an abort, a lost server, a retried activity) goes on as the turn's prompt plus its
    # tokens so far. The open reply is not a turn of the conversation: the policy answers the same turns and the
    # engine sends what is left of the same reply (the swe env's gold oracle failed on an open reply: IndexError).
    engine = SimEngine(Options(backend="sim", sim={"policy": {"kind": "swe_oracle", "solve_prob": 1.0}}), InferenceMetrics())
    env = SweLiteEnv()
    try:
        observation = env.reset(0, SweLiteConfig(task="t1-000", max_turns=20, actions=actions))
        messages = env.first_messages(observation) or [{"role": "user", "content": observation}]
        first = swe_oracle.reply(engine.sim.policy, conversation(engine.chat_prompt(messages)), 3, tools=prompt_tools(engine.chat_prompt(messages)))
        role = "tool" if messages[0]["role"] == "tools" else "user"
        messages += [{"role": "assistant", "content": first}, {"role": role, "content": env.step(first).observation}]
    finally:
        env.close()
    prompt = engine.chat_prompt(messages)
    params = SamplingParams(max_tokens=4096, temperature=1.0, seed=3)
    whole = Seq(prompt, params, 0, frozenset())
    engine._admit(whole)
    script = whole.state[2]
    assert open_reply(prompt) == [] and len(script) > cut
    continued = Seq(prompt + script[:cut], params, 0, frozenset())
    engine._admit(continued)
    assert open_reply(continued.prompt) == script[:cut]
    assert script[:cut] + continued.state[2] == script
