"""Warm-start: deterministic, cached by spec, safe to build concurrently, and it teaches the format."""
import threading

import pytest
import torch

from rollflow_engines.envs.arithmetic import parse_integer
from rollflow_engines.envs.frozen_lake import parse_action
from rollflow_engines.models import load_model, resolve_model_path
from rollflow_engines.models import warmstart
from rollflow_engines.models.loading import check_tiny_name
from rollflow_engines.models.warmstart import WARM_STARTS, WarmStart, make_example, resolve_warm_path
from rollflow_engines.roles.inference import Options as InferenceOptions

# Few steps on the 0.1M-parameter preset: enough to learn "digits then <eos>", seconds on 2 cores.
QUICK = WarmStart(env="arithmetic", env_config={"max_operand": 9, "ops": ["+"]}, steps=40, batch_size=16, learning_rate=1e-2)


def weights(path):
    return load_model(str(path))[0].state_dict()


def test_same_spec_same_weights_and_the_cache_is_reused(tmp_path, monkeypatch):
    spec = WarmStart(**{**QUICK.__dict__, "steps": 8})
    a = resolve_warm_path("default", spec, 0, tmp_path / "a")
    b = resolve_warm_path("default", spec, 0, tmp_path / "b")
    wa, wb = weights(a), weights(b)
    assert a.name == b.name and all(torch.equal(wa[k], wb[k]) for k in wa)
    assert any(not torch.equal(wa[k], v) for k, v in weights(resolve_model_path("tiny:default", 0, tmp_path / "a")).items())

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the cached model was rebuilt")

    monkeypatch.setattr(warmstart, "build_warm_model", no_rebuild)
    assert resolve_warm_path("default", spec, 0, tmp_path / "a") == a


def test_the_cache_key_covers_preset_seed_and_every_spec_field():
    keys = {QUICK.key("default", 0), QUICK.key("small", 0), QUICK.key("default", 1),
            WarmStart(**{**QUICK.__dict__, "steps": 41}).key("default", 0),
            WarmStart(**{**QUICK.__dict__, "correct_prob": 0.5}).key("default", 0)}
    assert len(keys) == 5


def test_concurrent_resolves_build_once(tmp_path, monkeypatch):
    builds = []
    real = warmstart.build_warm_model

    def counting(*args, **kwargs):
        builds.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(warmstart, "build_warm_model", counting)
    spec = WarmStart(**{**QUICK.__dict__, "steps": 3})
    resolve_model_path("tiny:default", 0, tmp_path)  # the base model, so the threads race on the warm-start only
    paths = [None, None]

    def resolve(i):
        paths[i] = resolve_warm_path("default", spec, 0, tmp_path)

    threads = [threading.Thread(target=resolve, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and paths[0] == paths[1] and paths[0].is_dir()


def test_a_warm_started_model_answers_in_the_format(tmp_path, monkeypatch):
    monkeypatch.setitem(WARM_STARTS, "quick", QUICK)
    cold, tok = load_model("tiny:default", 0, tmp_path)
    warm, _ = load_model("tiny:default+warm:quick", 0, tmp_path)
    prompts = [make_example(QUICK, 10_000 + i, tok)[0] for i in range(16)]  # not among the 40 × 16 training examples

    def parsed_share(model) -> float:
        ok = 0
        for p in prompts:
            out = model.generate(torch.tensor([p]), max_new_tokens=4, do_sample=False, pad_token_id=tok.pad_token_id,
                                 eos_token_id=tok.eos_token_id)
            ok += parse_integer(tok.decode(out[0, len(p):], skip_special_tokens=True)) is not None
        return ok / len(prompts)

    # Untrained: random characters, essentially never an integer. Warm-started: (nearly) always one.
    assert parsed_share(cold) <= 0.25 < 0.75 <= parsed_share(warm)


def test_frozen_lake_examples_are_laid_out_like_a_rollout(tmp_path):
    spec = WARM_STARTS["lake"]
    _, tok = load_model("tiny:default", 0, tmp_path)
    eos = tok.eos_token_id
    for i in range(5):
        prompt, response, mask = make_example(spec, i, tok)
        assert len(prompt) + len(response) <= 512 and len(mask) == len(response) and mask[-1] == 1
        # Each run of loss-masked tokens is one reply: an action name, then <eos>.
        replies, current = [], []
        for token, m in zip(response, mask):
            if m:
                current.append(token)
            elif current:
                replies.append(current)
                current = []
        replies.append(current)
        for reply in replies:
            assert reply[-1] == eos and parse_action(tok.decode(reply[:-1])) is not None
        # Between replies: the chat template's continuation, i.e. the next observation as a user turn.
        assert tok.decode(response).count("<|user|>") == len(replies) - 1


def test_long_tail_filler_gives_long_tailed_reply_lengths(tmp_path):
    _, tok = load_model("tiny:default", 0, tmp_path)
    replies = [tok.decode(make_example(WARM_STARTS["add-longtail"], i, tok)[1], skip_special_tokens=True) for i in range(400)]
    filler = sorted(len(r) - len(r.rstrip(" ")) for r in replies)
    assert filler[380] >= 4 * filler[200]  # LogNormal(sigma 1): p95 / median = e^1.645 ≈ 5.2
    assert all(parse_integer(r) is not None for r in replies)  # the env strips the filler


def test_names_are_checked():
    check_tiny_name("tiny:small+warm:add")
    check_tiny_name("tiny:default")
    with pytest.raises(ValueError, match="unknown warm-start"):
        check_tiny_name("tiny:small+warm:nope")
    with pytest.raises(ValueError, match="unknown tiny preset"):
        check_tiny_name("tiny:huge+warm:add")
    assert InferenceOptions(backend="torch", model="tiny:small+warm:lake").model == "tiny:small+warm:lake"
