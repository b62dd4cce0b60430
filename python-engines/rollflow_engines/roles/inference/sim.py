"""The sim backend: the real scheduler (batching, pause, abort, versions) with
no model behind it.

Everything a sequence produces comes from one ``random.Random`` seeded by
(server seed, request seed or else the prompt's tokens, sample index): its
natural length, its token ids and its logprobs (and, with
``length.sigma_prompt``, a length factor of the prompt's own). So a run repeats exactly, and
two servers with the same seed answer alike. Temperature, top_p and top_k do not
change the output (there is no distribution to sample from).

Tokens are drawn uniformly from [0, vocab_size) (the eos id excluded); a
response that reaches its natural length ends with the eos id and
finish_reason "stop"; max_tokens ends it earlier with "length".
"""
from __future__ import annotations

import asyncio
import math
import random
from pathlib import Path
from time import monotonic

from ...errors import RequestError
from ...exports import ServedModel
from ...liveness import deadlock
from ...models.chat import TOOLS_ROLE, split_tools
from .engine import SamplingParams, Seq, derive_seed
from .stepped import SteppedEngine
from . import swe_escape, swe_gold, swe_oracle, swe_oracle_bash
from .metrics import InferenceMetrics
from .options import Options, SimLength

# Synthetic chat tokenization: a role marker, then one token per UTF-8 byte. A leading tools message (models/chat.py)
# is rendered like any other role, its JSON as bytes: the prompt carries the tools, as a real template's does.
ROLE_MARKERS = {"system": 3, "user": 4, "assistant": 5}
OTHER_ROLE_MARKER, END_OF_TURN, BYTE_OFFSET = 6, 7, 8


def _bytes_of(token_ids: list[int]) -> bytes:
    return bytes(t - BYTE_OFFSET for t in token_ids if BYTE_OFFSET <= t < BYTE_OFFSET + 256)


def conversation(prompt: list[int]) -> list[str]:
    """The texts of a chat prompt's user, assistant and tool-result turns, in order (chat_prompt's synthetic tokens read
    back). A tool message (an env's observation in a conversation with tools, which the rollout sends as role ``tool``)
    has the other roles' marker, which a leading tools message shares: that one is the tools, not a turn."""
    texts: list[str] = []
    role, current = None, []
    turns = (ROLE_MARKERS["user"], ROLE_MARKERS["assistant"], OTHER_ROLE_MARKER)
    skip_first = prompt_tools(prompt) is not None  # the leading tools message
    for t in [*prompt, END_OF_TURN]:
        if t == END_OF_TURN:
            if role in turns and not skip_first:
                texts.append(_bytes_of(current).decode("utf-8", errors="ignore"))
            role, current, skip_first = None, [], False
        elif role is None and t in (*ROLE_MARKERS.values(), OTHER_ROLE_MARKER):
            role = t
        else:
            current.append(t)
    # The assistant turn the prompt leaves open (empty for a fresh turn, a continued generation's tokens so far) is
    # the reply being written, not a turn of the conversation.
    return texts[:-1] if texts and open_reply(prompt) is not None else texts


def open_reply(prompt: list[int]) -> list[int] | None:
    """The tokens of the assistant turn a prompt leaves open: [] for a fresh turn (the prompt ends with the assistant
    header), what was generated before a cut for a continued generation (the turn's prompt plus those tokens); None
    when the prompt leaves no assistant turn open."""
    marker = ROLE_MARKERS["assistant"]
    if marker not in prompt:
        return None
    tail = prompt[len(prompt) - prompt[::-1].index(marker):]
    return None if END_OF_TURN in tail else tail


def prompt_tools(prompt: list[int]) -> list[dict] | None:
    """The tools of a prompt that opens with a tools message (as chat_prompt renders one), or None. Read from the
    prompt's head because every later turn's prompt extends the first (continuations append ids), so the tools
    are there at every turn. The message's role is not in its tokens (other roles share its marker), so it is
    recognised by its content: a JSON array of function schemas, checked as the other backends check one."""
    if not prompt or prompt[0] != OTHER_ROLE_MARKER or END_OF_TURN not in prompt:
        return None
    text = _bytes_of(prompt[1:prompt.index(END_OF_TURN)]).decode("utf-8", errors="ignore")
    try:
        tools, _ = split_tools([{"role": TOOLS_ROLE, "content": text}])
    except RequestError:
        return None
    return tools


def lognormal_mean(rng: random.Random, mean: float, sigma: float) -> float:
    """A log-normal draw whose expectation is ``mean`` (log-space std ``sigma``)."""
    return rng.lognormvariate(math.log(mean) - sigma ** 2 / 2, sigma)


def draw_length(rng: random.Random, spec: SimLength, prompt_factor: float = 1.0) -> int:
    if spec.dist == "fixed":
        x = spec.mean
    elif spec.dist == "normal":
        x = rng.gauss(spec.mean, spec.std)
    else:
        x = lognormal_mean(rng, spec.mean, spec.sigma)
    return max(1, round(x * prompt_factor))


class SimEngine(SteppedEngine):
    backend_name = "sim"

    def __init__(self, options: Options, metrics: InferenceMetrics):
        super().__init__(options.max_batch, metrics)
        self.sim = options.sim
        self.seed = options.seed
        self.model_name = options.served_model_name or "sim"
        self.vocab_size = options.sim.vocab_size
        self.eos_id = options.sim.eos_token_id
        self.eos_token_ids = frozenset({self.eos_id})
        self.served = ServedModel(self.backend_name, frozenset({"sim"}), model=None, vocab_size=self.vocab_size)
        self._steps_done = 0

    def check_request(self, prompt: list[int], params: SamplingParams) -> None:
        for field, ids in (("prompt", prompt), ("stop_token_ids", params.stop_token_ids)):
            bad = next((t for t in ids if t >= self.vocab_size), None)
            if bad is not None:
                raise RequestError(field, f"token id {bad} is outside the vocabulary (size {self.vocab_size})", bad)
        policy = self.sim.policy
        if policy is not None and policy.kind == "swe_oracle" and policy.instances is not None:
            # An swe episode whose instance the oracle's dataset lacks is a 400 naming it, not a wrong reply or a failed step.
            turns = conversation(prompt)
            if swe_gold.is_swe_episode(turns):
                swe_gold.find_instance(policy, turns[0])

    def chat_prompt(self, messages: list[dict[str, str]]) -> list[int]:
        split_tools(messages)  # the 400s of the other backends: a tools message only first, and a JSON array of tools
        ids: list[int] = []
        for m in messages:
            ids.append(ROLE_MARKERS.get(m["role"], OTHER_ROLE_MARKER))
            ids.extend((BYTE_OFFSET + b) % self.vocab_size for b in m["content"].encode())
            ids.append(END_OF_TURN)
        ids.append(ROLE_MARKERS["assistant"])
        return ids

    def chat_continuation(self, history: list[dict[str, str]], messages: list[dict[str, str]]) -> list[int]:
        # Close the generated assistant turn, then the new turns and the next assistant header, as chat_prompt does.
        if any(m["role"] == TOOLS_ROLE for m in messages):  # as hf_chat_continuation: the tools lead the history
            raise RequestError("messages", f"a {TOOLS_ROLE} message belongs first in the history, not in the new turns")
        return [END_OF_TURN, *self.chat_prompt(messages)]

    def decode(self, token_ids: list[int]) -> str | None:
        # Random tokens have no text; a scripted policy's are the bytes of its reply.
        return _bytes_of(token_ids).decode("utf-8", errors="ignore") if self.sim.policy else None

    def _admit(self, seq: Seq) -> None:
        p = seq.params
        source = ("seed", p.seed) if p.seed is not None else ("prompt", tuple(seq.prompt))
        rng = random.Random(derive_seed(self.seed, source, seq.index))
        if self.sim.policy:  # the reply's bytes, then eos, at the latency model's pace
            seed, turns, cut = derive_seed(self.seed, source, seq.index), conversation(seq.prompt), open_reply(seq.prompt) or []
            if self.sim.policy.kind == "swe_escape":
                text = swe_escape.reply(self.sim.policy, turns, seed)
            else:  # the tools in the prompt say the episode wants tool calls (actions: tool_calls)
                text = swe_oracle.reply(self.sim.policy, turns, seed, tools=prompt_tools(seq.prompt))
                if turns and swe_oracle_bash.asks_for_bash(turns[0]):  # actions: bash
                    text = swe_oracle_bash.translate(text)
            script = [(BYTE_OFFSET + b) % self.vocab_size for b in text.encode()]
            if cut and script[:len(cut)] == cut:  # the same reply, so what is left of it
                script = script[len(cut):]
            seq.state = (rng, len(script) + 1, script)
            return
        length = p.sim_response_length or draw_length(rng, self.sim.length, self._prompt_factor(seq.prompt))
        seq.state = (rng, length, None)

    def _prompt_factor(self, prompt: list[int]) -> float:
        """The prompt's own length factor: the same for every request and sample of it."""
        sigma = self.sim.length.sigma_prompt
        if sigma == 0:
            return 1.0
        return lognormal_mean(random.Random(derive_seed(self.seed, "prompt-length", tuple(prompt))), 1.0, sigma)

    def _next_token(self, seq: Seq) -> tuple[int, float]:
        rng, length, script = seq.state
        logprob = -0.001 - rng.expovariate(1.0)
        if len(seq.tokens) == length - 1:
            return self.eos_id, logprob
        if script is not None:
            return script[len(seq.tokens)], logprob
        token = rng.randrange(self.vocab_size - 1)
        return (token + 1 if token >= self.eos_id else token), logprob

    def step_seconds(self, batch_size: int, prefill_tokens: int) -> float:
        """Duration of one decode step of ``batch_size`` sequences, ``prefill_tokens`` of them new prompt tokens."""
        s = self.sim
        return (s.c0 + s.c1 * batch_size + s.prefill_per_token * prefill_tokens) * s.time_scale

    async def _step(self, batch: list[Seq]) -> list[tuple[int, float]]:
        if self.sim.deadlock_after_steps is not None and self._steps_done >= self.sim.deadlock_after_steps:
            await deadlock(f"inference: decode step {self._steps_done + 1} never returns (sim.deadlock_after_steps {self.sim.deadlock_after_steps})")
        self._steps_done += 1
        started = monotonic()
        prefill = 0
        for seq in batch:
            if not seq.prefilled:
                prefill += len(seq.prompt)
                seq.prefilled = True
        delay = self.step_seconds(len(batch), prefill)
        outputs = [self._next_token(seq) for seq in batch]
        if delay > 0:
            # Sleep until the step's end time, so bookkeeping does not add to it.
            await asyncio.sleep(max(0.0, started + delay - monotonic()))
        return outputs

    async def _load_weights(self, path: Path) -> None:
        """Nothing to load (check_weights has checked the manifest): the sim only records the new version (the caller does)."""
