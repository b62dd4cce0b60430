import torch

from rollflow_engines.models import build_tiny_model, load_model


def test_same_seed_same_weights_other_seed_other_weights(tmp_path):
    a = load_model("tiny:default", seed=1, cache_dir=tmp_path)[0].state_dict()
    b_dir = build_tiny_model("default", 1, tmp_path / "again")
    b = load_model(str(b_dir))[0].state_dict()
    c = load_model("tiny:default", seed=2, cache_dir=tmp_path)[0].state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)


def test_tokenizer_round_trips_text_and_applies_the_chat_template(tmp_path):
    _, tok = load_model("tiny:default", seed=0, cache_dir=tmp_path)
    ids = tok.encode("12+7=19", add_special_tokens=False)
    assert len(ids) == 7 and tok.decode(ids) == "12+7=19"
    prompt = tok.apply_chat_template([{"role": "user", "content": "2+2"}], add_generation_prompt=True, tokenize=False)
    assert prompt == "<|user|>2+2\n<|assistant|>"
    ids = tok.apply_chat_template([{"role": "user", "content": "2+2"}], add_generation_prompt=True, tokenize=True)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    assert tok.decode(ids) == prompt


def test_model_generates_and_computes_a_loss(tmp_path):
    model, tok = load_model("tiny:default", seed=0, cache_dir=tmp_path)
    ids = torch.tensor([tok.encode("3+4=", add_special_tokens=False)])
    out = model(input_ids=ids, labels=ids)
    assert out.logits.shape == (1, 4, len(tok)) and torch.isfinite(out.loss)
    gen = model.generate(ids, max_new_tokens=5, do_sample=False, pad_token_id=tok.pad_token_id)
    assert gen.shape[1] == 9


def test_missing_model_directory_is_a_clear_error(tmp_path):
    import pytest

    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_model(str(tmp_path / "nope"))
