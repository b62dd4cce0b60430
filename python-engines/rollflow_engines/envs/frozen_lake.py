"""FrozenLake as a text game: walk from S to G across the ice without stepping into a hole.

Map: ``map_size`` × ``map_size`` (4 by default), start at the top-left, goal at
the bottom-right, each other tile frozen with probability ``frozen_prob``
(holes otherwise), drawn from the seed until a path from start to goal
exists (after 1,000 failed draws a random monotone path is carved, so a map
always exists). A fixed map may be given instead as ``desc`` (rows of S, F, H, G).

Actions: ``Left``, ``Down``, ``Right``, ``Up``, case-insensitive, either the
whole reply or the content of its last ``<answer>…</answer>`` (surrounding
whitespace, quotes, ``*`` and a final ``.`` are ignored). Anything else is an
invalid action: the player does not move, the reward is ``-format_penalty``,
and the turn still counts. Moving into the edge leaves the player in place
(a valid move, as in gymnasium). With ``is_slippery`` the player moves in the
intended direction with probability 1/3 and in each perpendicular direction
with 1/3, drawn from the episode's seed (so a replay of the same actions
slides the same way).

Reward 1 on reaching the goal, 0 otherwise. The episode ends at the goal, in
a hole, or after ``max_turns`` steps (``info.truncated``).

Observations: ``render: text`` (default) explains the game, reports the last
move and draws the map with spaced tiles; ``render: compact`` is the map alone,
one row per line with P for the player (e.g. ``SFFF\nFPFH\nFFFH\nHFFG``), for
tiny models whose context holds a few hundred tokens (about 20 per turn
instead of about 150).
"""
from __future__ import annotations

from collections import deque
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import BaseEnv, EnvConfig, StepResult, extract_answer, preview
from .registry import register_env
from .rng import SplitMix64

ACTIONS = ("Left", "Down", "Right", "Up")  # gymnasium's order: 0 Left, 1 Down, 2 Right, 3 Up
MOVES = {"Left": (0, -1), "Down": (1, 0), "Right": (0, 1), "Up": (-1, 0)}
_MAX_DRAWS = 1000


class FrozenLakeConfig(EnvConfig):
    map_size: int = Field(default=4, ge=2, le=16, description="Side of the generated square map.")
    is_slippery: bool = Field(default=False, description="Moves slide sideways with probability 2/3 (gymnasium's rule).")
    max_turns: int = Field(default=20, ge=1, le=10_000, description="Steps (valid or not) before the episode is truncated.")
    frozen_prob: float = Field(default=0.8, gt=0, le=1, description="Probability that a generated tile is frozen rather than a hole.")
    format_penalty: float = Field(default=0.0, ge=0, description="An invalid action is rewarded -format_penalty.")
    desc: list[str] | None = Field(default=None, description="A fixed map instead of a generated one, e.g. ['SFFF', 'FHFH', 'FFFH', 'HFFG'].")
    render: Literal["text", "compact"] = Field(default="text", description="text: instructions, last move and map; compact: the map alone, P marking the player.")

    @field_validator("desc")
    @classmethod
    def _valid_map(cls, desc: list[str] | None) -> list[str] | None:
        if desc is None:
            return desc
        if not desc or not desc[0]:
            raise ValueError("must have at least one row and one column")
        if len(desc) > 64 or any(len(row) != len(desc[0]) for row in desc) or len(desc[0]) > 64:
            raise ValueError("rows must all have the same length, at most 64 rows of at most 64 tiles")
        tiles = "".join(desc)
        if set(tiles) - set("SFHG"):
            raise ValueError(f"tiles must be S, F, H or G; got {''.join(sorted(set(tiles) - set('SFHG')))!r}")
        if tiles.count("S") != 1 or tiles.count("G") != 1:
            raise ValueError("needs exactly one S and one G")
        if not _has_path(desc):
            raise ValueError("no path from S to G")
        return desc

    @model_validator(mode="after")
    def _desc_or_size(self) -> "FrozenLakeConfig":
        if self.desc is not None and "map_size" in self.model_fields_set:
            raise ValueError("give either desc or map_size, not both")
        return self


def _find(desc: list[str], tile: str) -> tuple[int, int]:
    for r, row in enumerate(desc):
        c = row.find(tile)
        if c >= 0:
            return r, c
    raise ValueError(tile)


def _has_path(desc: list[str]) -> bool:
    rows, cols = len(desc), len(desc[0])
    start = _find(desc, "S")
    seen, todo = {start}, deque([start])
    while todo:
        r, c = todo.popleft()
        if desc[r][c] == "G":
            return True
        for dr, dc in MOVES.values():
            nr, nc = r + dr, c + dc
            if 0 <= nr < rows and 0 <= nc < cols and (nr, nc) not in seen and desc[nr][nc] != "H":
                seen.add((nr, nc))
                todo.append((nr, nc))
    return False


def generate_map(size: int, frozen_prob: float, seed: int) -> list[str]:
    """A size × size map with S top-left and G bottom-right and a path between them; a pure function of its arguments."""
    rng = SplitMix64(seed)
    for _ in range(_MAX_DRAWS):
        grid = [["F" if rng.uniform() < frozen_prob else "H" for _ in range(size)] for _ in range(size)]
        grid[0][0], grid[-1][-1] = "S", "G"
        desc = ["".join(row) for row in grid]
        if _has_path(desc):
            return desc
    # Very low frozen_prob: carve a random monotone path through the last draw.
    steps = ["Down"] * (size - 1) + ["Right"] * (size - 1)
    rng.shuffle(steps)
    r = c = 0
    for step in steps:
        dr, dc = MOVES[step]
        r, c = r + dr, c + dc
        if grid[r][c] == "H":
            grid[r][c] = "F"
    return ["".join(row) for row in grid]


def parse_action(text: str) -> str | None:
    """The canonical action named by ``text``, or None if it names none (see the module doc)."""
    word = extract_answer(text).strip().strip("\"'`*").strip()
    if word.endswith("."):
        word = word[:-1].strip()
    for action in ACTIONS:
        if word.lower() == action.lower():
            return action
    return None


@register_env
class FrozenLakeEnv(BaseEnv):
    name = "frozen_lake"
    Config = FrozenLakeConfig
    description = "Walk from S to G on a frozen lake without falling into a hole; actions Left/Down/Right/Up."
    # The map and the slip stream are drawn from the seed alone: the same seed and actions rebuild the same episode.
    on_env_loss = "replay"

    def reset(self, seed: int, config: FrozenLakeConfig) -> str:
        self.config = config
        self.desc = list(config.desc) if config.desc is not None else generate_map(config.map_size, config.frozen_prob, seed)
        # The slip stream gets its own generator so the map does not depend on it.
        self.slip_rng = SplitMix64(seed ^ 0x5EED_0F_5117)
        self.pos = _find(self.desc, "S")
        self.turn = 0
        self.done = False
        self.success = False
        self.outcome: str | None = None
        return self._render("")

    def info(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "max_turns": self.config.max_turns,
            "success": self.success,
            "position": list(self.pos),
            "map": list(self.desc),
            "legal_actions": [] if self.done else list(ACTIONS),
        }

    def step(self, action: str) -> StepResult:
        self.turn += 1
        chosen = parse_action(action)
        moved: str | None = None
        reward = 0.0
        if chosen is None:
            reward = 0.0 - self.config.format_penalty  # never -0.0
            message = (f"Invalid action {preview(action)!r}: reply with exactly one of {', '.join(ACTIONS)}, "
                       f"e.g. <answer>Down</answer>. You stay where you are.")
        else:
            moved = chosen
            if self.config.is_slippery:
                i = ACTIONS.index(chosen)
                moved = ACTIONS[(i + self.slip_rng.below(3) - 1) % 4]
            dr, dc = MOVES[moved]
            r, c = self.pos[0] + dr, self.pos[1] + dc
            if 0 <= r < len(self.desc) and 0 <= c < len(self.desc[0]):
                self.pos = (r, c)
                message = f"You moved {moved}." if moved == chosen else f"You tried to move {chosen} but slid {moved}."
            else:
                message = (f"You tried to move {chosen} but slid {moved} into the edge" if moved != chosen
                           else f"You bumped into the edge going {moved}") + " and stayed in place."
            tile = self.desc[self.pos[0]][self.pos[1]]
            if tile == "G":
                self.done, self.success, self.outcome, reward = True, True, "goal", 1.0
                message += " You reached the goal!"
            elif tile == "H":
                self.done, self.outcome = True, "hole"
                message += " You fell into a hole."
        truncated = False
        if not self.done and self.turn >= self.config.max_turns:
            self.done, self.outcome, truncated = True, "max_turns", True
            message += f" Out of turns ({self.config.max_turns})."
        info = {
            **self.info(),
            "invalid_action": chosen is None,
            "action": chosen,
            "moved": moved,
            "outcome": self.outcome,
            "truncated": truncated,
        }
        return StepResult(self._render(message), reward, self.done, info)

    def _render(self, message: str) -> str:
        if self.config.render == "compact":
            return "\n".join("".join("P" if (r, c) == self.pos else tile for c, tile in enumerate(row)) for r, row in enumerate(self.desc))
        rows = [" ".join("P" if (r, c) == self.pos else tile for c, tile in enumerate(row)) for r, row in enumerate(self.desc)]
        lines = [message] if message else []
        if not message:
            lines.append(
                f"Frozen lake, {len(self.desc)}x{len(self.desc[0])}. Reach the goal G without stepping into a hole H. "
                "P is you, F is frozen ice (safe), S is the start."
            )
        lines.extend(rows)
        if self.done:
            lines.append("Episode over.")
        else:
            lines.append(f"Turn {self.turn + 1} of {self.config.max_turns}. Legal actions: {', '.join(ACTIONS)}. "
                         "Reply with one action, e.g. <answer>Down</answer>.")
        return "\n".join(lines)
