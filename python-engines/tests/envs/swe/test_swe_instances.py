"""Reading SWE-bench-format rows: the test lists as JSON strings or lists, pytest node ids only, and the name
pytest's JUnit report gives each id (junit_key), checked against pytest's own mangling."""
import json

import pytest
from _pytest.junitxml import mangle_test_address

from rollflow_engines.envs.swe.instances import Fields, junit_key, parse_row

ROW = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "problem_statement": "p", "patch": "", "test_patch": "",
       "FAIL_TO_PASS": json.dumps(["tests/test_a.py::test_x"]), "PASS_TO_PASS": ["tests/test_a.py::TestB::test_y[1-2]"]}


@pytest.mark.parametrize("node_id", ["tests/test_a.py::test_x", "tests/test_a.py::TestB::test_y", "test_top.py::test_z[a b-c::d]",
                                     "pkg/sub/tests/test_q.py::TestOuter::TestInner::test_w[x.py-1]", "t.py::test_v[]"])
def test_junit_key_matches_pytests_own_mangling(node_id):
    names = mangle_test_address(node_id)
    assert junit_key(node_id) == (".".join(names[:-1]), names[-1])


def test_a_row_with_json_string_and_list_test_ids():
    instance = parse_row(ROW, Fields(), with_split=False)
    assert instance.fail_to_pass == ("tests/test_a.py::test_x",) and instance.pass_to_pass == ("tests/test_a.py::TestB::test_y[1-2]",)
    assert instance.split is None


@pytest.mark.parametrize("change, why", [
    ({"FAIL_TO_PASS": "test_x (module.Class)"}, "FAIL_TO_PASS is a string that is not JSON"),
    ({"PASS_TO_PASS": ["/abs/test_a.py::t"]}, "not pytest node ids"),
    ({"PASS_TO_PASS": ["../test_a.py::t"]}, "not pytest node ids"),
    ({"PASS_TO_PASS": ["tests/test_a.py::test_x"]}, "in both FAIL_TO_PASS and PASS_TO_PASS"),
    ({"PASS_TO_PASS": ["tests/test_a.py::t", "tests/test_a.py::t"]}, "names a test id twice"),
    ({"PASS_TO_PASS": ["tests/test_a.py::T::test_x", "tests/test_a/T.py::test_x"]}, "have the same name in pytest's JUnit report"),
    ({"PASS_TO_PASS": {"a": 1}}, "PASS_TO_PASS is dict; expected a list"),
    ({"base_commit": None}, "base_commit is NoneType; expected a string"),
    ({"instance_id": "  "}, "instance_id is empty"),
])
def test_a_malformed_row_names_the_field_and_the_fault(change, why):
    with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse_row({**ROW, **change}, Fields(), with_split=False)


def test_field_names_are_settings_and_the_split_is_read_when_asked():
    renamed = {("id" if k == "instance_id" else k): v for k, v in ROW.items()}
    assert parse_row(renamed, Fields(instance_id="id"), with_split=False).instance_id == "o__r-1"
    with pytest.raises(ValueError, match=r"no field 'id' \(fields.instance_id\)"):
        parse_row(ROW, Fields(instance_id="id"), with_split=False)
    with pytest.raises(ValueError, match="no field 'split'"):
        parse_row(ROW, Fields(), with_split=True)
    assert parse_row({**ROW, "part": "dev"}, Fields(split="part"), with_split=True).split == "dev"


def test_a_dataset_is_read_once_per_file_version(tmp_path, monkeypatch):
    from rollflow_engines.envs.swe import instances
    reads = []
    real = instances.read_dataset
    monkeypatch.setattr(instances, "read_dataset", lambda *a: reads.append(a[0]) or real(*a))
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(ROW) + "\n")
    first = instances.load_dataset(str(path), "auto", Fields(), False)
    assert instances.load_dataset(str(path), "auto", Fields(), False) is first and len(reads) == 1
    path.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "instance_id": "o__r-2"}) + "\n")  # a new version: read again
    assert len(instances.load_dataset(str(path), "auto", Fields(), False).instances) == 2 and len(reads) == 2
