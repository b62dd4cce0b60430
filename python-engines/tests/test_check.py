"""`python -m rollflow_engines check`: the servers' own models, offline, each problem at its run-config path."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rollflow_engines.check import CheckRequest, check, main


def problems(request: dict) -> dict[str, dict]:
    return {p["path"]: p for p in check(CheckRequest.model_validate(request))}


def test_valid_options_and_configs_have_no_problems():
    assert problems({
        "engines": [
            {"path": "engines.inference[0]", "role": "inference", "backend": "sim", "options": {"max_batch": 4, "sim": {"length": {"mean": 16}}}},
            {"path": "engines.trainer", "role": "trainer", "backend": "torch", "options": {"model": "tiny:small", "learning_rate": 1e-3}},
            {"path": "engines.env", "role": "env", "backend": "python", "options": {"domains": {"qa": "exact_match"}}},
        ],
        "envs": [{"path": "custom_envs.lake", "env_type": "frozen_lake", "env_config": {"map_size": 3}}],
        "verifiers": [{"path": "custom_envs.qa.env_config.verifier", "name": "math_verify"}],
    }) == {}


def test_engine_options_name_the_key_the_value_and_what_was_expected():
    found = problems({"engines": [
        {"path": "engines.trainer", "role": "trainer", "backend": "sim", "options": {"learning_rate": -1, "megatron": {"bf": True}}},
        {"path": "engines.inference[1]", "role": "inference", "backend": "torch", "options": {"model": "tiny:nope", "max_bach": 3}},
        {"path": "engines.env", "role": "env", "backend": "python", "options": {"domains": {"qa": "exact"}}},
    ]})
    assert found["engines.trainer.options.learning_rate"] == {
        "path": "engines.trainer.options.learning_rate", "given": -1, "expected": "Input should be greater than 0"}
    assert found["engines.trainer.options.megatron.bf"]["expected"].startswith('unknown key; did you mean "bf16"? (known here: ')
    assert "unknown tiny preset" in found["engines.inference[1].options.model"]["expected"]
    assert found["engines.inference[1].options.max_bach"]["expected"].startswith('unknown key; did you mean "max_batch"?')
    assert "unknown verifier 'exact'" in found["engines.env.options.domains"]["expected"]
    assert len(found) == 5


def test_a_backend_this_machine_cannot_run_is_the_backend_s_problem():
    found = problems({"engines": [
        {"path": "engines.trainer", "role": "trainer", "backend": "megatron", "options": {}},
        {"path": "engines.env", "role": "env", "backend": "sim", "options": {}},
    ]})
    assert "needs Megatron-Core" in found["engines.trainer.backend"]["expected"]
    assert found["engines.env.backend"] == {"path": "engines.env.backend", "given": "sim", "expected": "one of python"}


def test_env_types_and_env_configs():
    found = problems({
        "envs": [
            {"path": "custom_envs.a", "env_type": "frozen_lak", "env_config": {}},
            {"path": "custom_envs.b", "env_type": "frozen_lake", "env_config": {"map_size": 99, "desc": ["SHG"]}},
            {"path": "custom_envs.c", "env_type": "arithmetic", "env_config": {"ops": ["^"], "max_operand": "ten"}},
            {"path": "custom_envs.d", "env_type": "latency_sm", "env_config": {}},
        ],
        "other_env_types": ["latency_sim", "dataset"],
    })
    assert found["custom_envs.a.env_type"]["expected"] == (
        'a registered env: one of arithmetic, dataset, frozen_lake, latency_sim, swe, swe_lite; did you mean "frozen_lake"?')
    assert found["custom_envs.d.env_type"]["expected"].endswith('did you mean "latency_sim"?')
    assert found["custom_envs.b.env_config.map_size"]["given"] == 99
    assert found["custom_envs.b.env_config.desc"]["expected"] == "no path from S to G"
    assert found["custom_envs.c.env_config.ops[0]"]["given"] == "^"
    assert found["custom_envs.c.env_config.max_operand"]["given"] == "ten"
    assert len(found) == 6


def test_verifiers():
    found = problems({"verifiers": [{"path": "custom_envs.qa.env_config.verifier", "name": "math_verif"}]})
    assert found == {"custom_envs.qa.env_config.verifier": {
        "path": "custom_envs.qa.env_config.verifier", "given": "math_verif",
        "expected": 'a registered verifier: one of code_exec, exact_match, llm_judge, math_verify; did you mean "math_verify"?'}}


def test_verifier_settings_are_checked_against_the_verifier():
    item = {"path": "custom_envs.qa.env_config.verifier", "name": "llm_judge", "config_path": "custom_envs.qa.env_config.verifier_config"}
    found = problems({"verifiers": [{**item, "config": {"url": "http://127.0.0.1:8302", "template": "Grade {answer}", "atempts": 2}}]})
    assert set(found) == {"custom_envs.qa.env_config.verifier_config.template", "custom_envs.qa.env_config.verifier_config.atempts"}
    assert "unknown placeholder {answer}" in found["custom_envs.qa.env_config.verifier_config.template"]["expected"]
    assert 'did you mean "attempts"' in found["custom_envs.qa.env_config.verifier_config.atempts"]["expected"]
    assert problems({"verifiers": [{**item, "config": {"url": "http://127.0.0.1:8302", "template": "Grade {response}"}}]}) == {}


def test_main_prints_json_and_exits_1_on_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"envs": [{"path": "custom_envs.x", "env_type": "nope"}]}))
    assert main(str(request)) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and [p["path"] for p in out["problems"]] == ["custom_envs.x.env_type"]
    request.write_text("{}")
    assert main(str(request)) == 0
    assert json.loads(capsys.readouterr().out) == {"ok": True, "problems": []}


def test_an_unusable_request_exits_2_naming_its_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"engines": [{"role": "painter"}], "extra": 1}))
    assert main(str(request)) == 2
    err = capsys.readouterr().err
    for field in ("request.engines[0].path", "request.engines[0].role", "request.extra"):
        assert field in err
    assert main(str(tmp_path / "missing.json")) == 2
    assert "cannot read" in capsys.readouterr().err


def test_the_module_command_reads_stdin_and_binds_no_port():
    request = {"engines": [{"path": "engines.trainer", "role": "trainer", "backend": "sim", "options": {"lr": 1}}]}
    r = subprocess.run([sys.executable, "-m", "rollflow_engines", "check"], input=json.dumps(request),
                       capture_output=True, text=True, cwd=Path(__file__).parent.parent, timeout=60)
    assert r.returncode == 1, r.stderr
    assert [p["path"] for p in json.loads(r.stdout)["problems"]] == ["engines.trainer.options.lr"]
