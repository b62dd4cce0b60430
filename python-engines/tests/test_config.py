import pytest

from rollflow_engines.config import ConfigError, load_config


def test_defaults_pick_the_role_backend():
    assert load_config(None, {"role": "inference"}).backend == "sim"
    assert load_config(None, {"role": "env"}).backend == "python"


def test_flags_override_the_file(tmp_path):
    f = tmp_path / "engine.yaml"
    f.write_text("role: trainer\nbackend: torch\nport: 9001\n")
    cfg = load_config(str(f), {"port": 9002, "backend": None})
    assert (cfg.role, cfg.backend, cfg.port) == ("trainer", "torch", 9002)


@pytest.mark.parametrize(
    "overrides, expected",
    [
        ({"role": "painter"}, "role"),
        ({"role": "inference", "backend": "megatron"}, "backend: got 'megatron'; expected one of sim, torch, vllm"),
        ({"role": "env", "port": 70000}, "port"),
        ({"role": "env", "port": "eighty"}, "port"),
    ],
)
def test_bad_values_name_the_key_and_value(overrides, expected):
    with pytest.raises(ConfigError) as e:
        load_config(None, overrides)
    assert expected in str(e.value)


def test_unknown_key_in_file_is_named(tmp_path):
    f = tmp_path / "engine.yaml"
    f.write_text("role: env\nprot: 9000\n")
    with pytest.raises(ConfigError, match=r"prot: Extra inputs are not permitted \(given: 9000\)"):
        load_config(str(f), {})


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(str(tmp_path / "missing.yaml"), {})
    bad = tmp_path / "bad.yaml"
    bad.write_text("role: [env\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(str(bad), {})
    listy = tmp_path / "list.yaml"
    listy.write_text("- role\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(str(listy), {})


def test_option_flags_nest_and_keep_yaml_types():
    from rollflow_engines.config import parse_option_flags

    assert parse_option_flags(["a=1", "b.c=true", "b.d=[1, 2]", "e=text"]) == {"a": 1, "b": {"c": True, "d": [1, 2]}, "e": "text"}
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_option_flags(["novalue"])


def test_unknown_role_option_is_named():
    with pytest.raises(ConfigError, match=r"options\.foo: Extra inputs are not permitted"):
        load_config(None, {"role": "env"}, ["foo=1"])
