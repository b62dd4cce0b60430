"""frozen_lake: deterministic maps with a path, scripted play to the goal, invalid actions, holes, max_turns."""
from collections import deque

import pytest
from pydantic import ValidationError

from rollflow_engines.envs import get_env
from rollflow_engines.envs.frozen_lake import MOVES, FrozenLakeConfig, FrozenLakeEnv, generate_map, parse_action
from rollflow_engines.envs.rng import SplitMix64

FIXED = ["SFFF", "FHFH", "FFFH", "HFFG"]  # gymnasium's 4x4 map


def make(seed: int = 0, **config) -> tuple[FrozenLakeEnv, str]:
    env = FrozenLakeEnv()
    return env, env.reset(seed, FrozenLakeConfig(**config))


def shortest_actions(desc: list[str]) -> list[str]:
    """Breadth-first search from S to G avoiding holes: the scripted optimal play."""
    start = next((r, row.index("S")) for r, row in enumerate(desc) if "S" in row)
    came = {start: None}
    todo = deque([start])
    while todo:
        r, c = todo.popleft()
        if desc[r][c] == "G":
            path, node = [], (r, c)
            while came[node] is not None:
                node, action = came[node]
                path.append(action)
            return path[::-1]
        for action, (dr, dc) in MOVES.items():
            nxt = (r + dr, c + dc)
            if 0 <= nxt[0] < len(desc) and 0 <= nxt[1] < len(desc[0]) and nxt not in came and desc[nxt[0]][nxt[1]] != "H":
                came[nxt] = ((r, c), action)
                todo.append(nxt)
    raise AssertionError("no path")


def test_registered_under_its_name():
    assert get_env("frozen_lake") is FrozenLakeEnv


def test_rng_is_splitmix64():
    # Published SplitMix64 outputs: the env streams cannot drift with Python or numpy versions.
    rng = SplitMix64(1234567)
    assert [rng.next_u64() for _ in range(3)] == [6457827717110365317, 3203168211198807973, 9817491932198370423]


def test_same_seed_same_map_and_maps_are_pinned():
    a, _ = make(seed=3)
    b, _ = make(seed=3)
    assert a.info()["map"] == b.info()["map"] == ["SFFF", "FFFH", "FHFF", "FFFG"]
    maps = {tuple(make(seed=s)[0].info()["map"]) for s in range(20)}
    assert len(maps) > 5, "different seeds should give different maps"


@pytest.mark.parametrize("size, frozen_prob", [(2, 0.8), (4, 0.8), (8, 0.8), (16, 0.6), (6, 0.05)])
def test_every_generated_map_has_a_path(size, frozen_prob):
    for seed in range(30):
        desc = generate_map(size, frozen_prob, seed)
        assert len(desc) == size and all(len(row) == size for row in desc)
        assert desc[0][0] == "S" and desc[-1][-1] == "G"
        shortest_actions(desc)  # raises if there is none


@pytest.mark.parametrize("seed", range(10))
def test_scripted_optimal_play_reaches_the_goal(seed):
    env, observation = make(seed=seed, map_size=5)
    assert "Legal actions: Left, Down, Right, Up" in observation
    plan = shortest_actions(env.info()["map"])
    for i, action in enumerate(plan):
        observation, reward, done, info = env.step(f"<answer>{action}</answer>")
        assert not info["invalid_action"]
        if i < len(plan) - 1:
            assert (reward, done) == (0.0, False)
    assert (reward, done, info["success"], info["outcome"]) == (1.0, True, True, "goal")
    assert info["turn"] == len(plan) and info["legal_actions"] == []
    assert "You reached the goal!" in observation and "Episode over." in observation


def test_observation_shows_the_player_and_the_map():
    env, observation = make(desc=FIXED)
    assert observation.splitlines()[1:5] == ["P F F F", "F H F H", "F F F H", "H F F G"]
    observation, *_ = env.step("Right")
    assert observation.splitlines()[1:5] == ["S P F F", "F H F H", "F F F H", "H F F G"]


@pytest.mark.parametrize("action", ["jump", "", "<answer>?</answer>", "go left", "<answer></answer>", "Left Down", "\x00" * 10_000])
def test_invalid_actions_are_reported_not_raised(action):
    env, _ = make(desc=FIXED, format_penalty=0.1)
    observation, reward, done, info = env.step(action)
    assert info["invalid_action"] is True and info["action"] is None
    assert reward == -0.1 and done is False
    assert info["position"] == [0, 0] and info["turn"] == 1
    assert observation.startswith("Invalid action") and "Legal actions" in observation
    _, _, _, info = env.step("Right")  # the episode goes on
    assert info["invalid_action"] is False and info["position"] == [0, 1]


def test_invalid_action_reward_is_zero_without_penalty():
    env, _ = make(desc=FIXED)
    assert env.step("jump").reward == 0.0


@pytest.mark.parametrize("text, action", [
    ("Left", "Left"), ("LEFT", "Left"), ("  down\n", "Down"), ("<answer>right</answer>", "Right"),
    ("I think up. <answer> Up </answer>", "Up"), ("<ANSWER>Down.</ANSWER>", "Down"), ("**Left**", "Left"),
    ("<answer>Left</answer> no wait <answer>Right</answer>", "Right"), ("'Up'", "Up"),
    ("left right", None), ("L", None), ("<answer>Left", None), ("0", None),
])
def test_action_parsing(text, action):
    assert parse_action(text) == action


def test_edge_bump_stays_in_place():
    env, _ = make(desc=FIXED)
    observation, reward, done, info = env.step("Up")
    assert info["position"] == [0, 0] and not info["invalid_action"] and not done
    assert "edge" in observation


def test_hole_ends_the_episode_with_zero_reward():
    env, _ = make(desc=FIXED)
    env.step("Right")
    observation, reward, done, info = env.step("Down")
    assert (reward, done, info["success"], info["outcome"]) == (0.0, True, False, "hole")
    assert "hole" in observation


def test_max_turns_ends_the_episode_even_with_invalid_actions():
    env, _ = make(desc=FIXED, max_turns=3)
    results = [env.step(a) for a in ("Left", "jump", "Up")]
    assert [r.done for r in results] == [False, False, True]
    info = results[-1].info
    assert info["truncated"] is True and info["outcome"] == "max_turns" and info["success"] is False
    assert "Out of turns" in results[-1].observation


def test_slippery_moves_are_a_function_of_the_seed():
    def play(seed):
        env, _ = make(seed=seed, map_size=8, frozen_prob=1.0, is_slippery=True, max_turns=50)
        return [env.step(a).info["moved"] for a in ["Right", "Down"] * 10]

    assert play(11) == play(11)
    moved = play(11)
    assert set(moved) - {"Right", "Down"}, "slippery ice should slide sometimes"


@pytest.mark.parametrize("config, field", [
    ({"map_size": 1}, "map_size"), ({"max_turns": 0}, "max_turns"), ({"frozen_prob": 0}, "frozen_prob"),
    ({"format_penalty": -1}, "format_penalty"), ({"desc": ["SH", "HG"]}, "desc"), ({"desc": ["SF", "FX"]}, "desc"),
    ({"desc": ["SFG"]}, None), ({"desc": ["SF", "F"]}, "desc"), ({"desc": FIXED, "map_size": 4}, ""), ({"mapsize": 4}, "mapsize"),
])
def test_bad_config_is_rejected_naming_the_key(config, field):
    if field is None:  # a valid one-row map
        FrozenLakeConfig(**config)
        return
    with pytest.raises(ValidationError) as e:
        FrozenLakeConfig(**config)
    assert ".".join(str(p) for p in e.value.errors()[0]["loc"]) == field


def test_compact_render_is_the_map_alone():
    env, observation = make(0, desc=FIXED, render="compact")
    assert observation == "PFFF\nFHFH\nFFFH\nHFFG"
    assert env.step("Right").observation == "SPFF\nFHFH\nFFFH\nHFFG"
    assert env.step("banana").observation == "SPFF\nFHFH\nFFFH\nHFFG"  # invalid: no move, no crash
    assert make(0, desc=FIXED)[1] != observation  # the default render is unchanged
