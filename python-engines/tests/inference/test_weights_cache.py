"""weights_cache.py against a real versitygw, on made-up exports (a manifest and two files): what a pull trusts,
what it leaves behind when it fails or dies, and what it reuses."""
import hashlib
import json
import subprocess
import sys
import uuid

import pytest

from rollflow_engines.errors import NotFoundError, RequestError, UnavailableError
from rollflow_engines.exports import EXPORT_MANIFEST
from rollflow_engines.objects import write_object
from rollflow_engines.roles.inference import weights_cache
from rollflow_engines.roles.inference.weights_cache import WeightsCache

FILES = {"model.safetensors": b"\x01" * 1000, "tokenizer/vocab.json": b'{"a": 0}'}


def upload(ref: str, files: dict[str, bytes], listed: dict | None = None) -> bytes:
    """An export at ``ref`` as the trainer uploads it: the files, then a manifest listing them (or ``listed``)."""
    for name, body in files.items():
        write_object(f"{ref}/{name}", body)
    if listed is None:
        listed = {name: {"size": len(body), "sha256": hashlib.sha256(body).hexdigest()} for name, body in files.items()}
    manifest = json.dumps({"backend": "sim", "version": 1, "files": listed}).encode()
    write_object(f"{ref}/{EXPORT_MANIFEST}", manifest)
    return manifest


def fits(_manifest: dict) -> None:
    """The served-model check a server passes in; these exports fit any."""


@pytest.fixture
def ref(object_store) -> str:
    return object_store.ref(f"cache-test/{uuid.uuid4().hex[:8]}/v1")


def test_a_pull_is_the_export_as_uploaded_and_a_second_pull_reuses_it(ref, tmp_path, monkeypatch):
    manifest = upload(ref, FILES)
    cache = WeightsCache(tmp_path / "cache")
    entry = cache.pull(ref, fits)
    assert {p.relative_to(entry).as_posix(): p.read_bytes() for p in entry.rglob("*") if p.is_file()} == {**FILES, EXPORT_MANIFEST: manifest}
    monkeypatch.setattr(weights_cache, "read_object_to_file", lambda *a: pytest.fail("downloaded again"))
    assert cache.pull(ref, fits) == entry


def test_an_object_that_differs_from_the_manifest_is_refused_naming_it_and_leaves_nothing(ref, tmp_path):
    upload(ref, FILES)
    write_object(f"{ref}/model.safetensors", b"\x02" * 1000)  # intact by its own digest, but not what the manifest lists
    cache = WeightsCache(tmp_path / "cache")
    with pytest.raises(RequestError, match=f"{ref}/model.safetensors does not match the export's manifest") as refused:
        cache.pull(ref, fits)
    assert (refused.value.status_code, refused.value.given) == (400, ref)
    assert list((tmp_path / "cache").iterdir()) == []


@pytest.mark.parametrize("listed, words", [
    ({"../../escape": {"size": 1, "sha256": "0" * 64}}, "which is not a path inside the export"),
    ({"/etc/passwd": {"size": 1, "sha256": "0" * 64}}, "which is not a path inside the export"),
    ({"model.safetensors": {"size": 1000}}, "without its size and sha256"),
    (None, "lists no files"),
])
def test_a_manifest_that_lists_files_unsafely_or_not_at_all_is_refused_before_any_download(ref, tmp_path, listed, words):
    write_object(f"{ref}/{EXPORT_MANIFEST}", json.dumps({"backend": "sim", **({"files": listed} if listed else {})}).encode())
    with pytest.raises(RequestError, match=words):
        WeightsCache(tmp_path / "cache").pull(ref, fits)
    assert not (tmp_path / "escape").exists()


def test_a_pull_that_fails_or_dies_midway_leaves_no_entry_and_a_later_pull_completes(ref, tmp_path, monkeypatch):
    upload(ref, FILES)
    root = tmp_path / "cache"
    # A pull in this process that fails after its first file: its scratch goes with it.
    real = weights_cache.read_object_to_file
    calls = []

    def dies_on_the_second(object_ref, file):
        calls.append(object_ref)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as abrupt as it gets in-process
        return real(object_ref, file)

    monkeypatch.setattr(weights_cache, "read_object_to_file", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        WeightsCache(root).pull(ref, fits)
    assert list(root.iterdir()) == [], "no entry, no scratch"
    monkeypatch.setattr(weights_cache, "read_object_to_file", real)
    # A pull killed with its process: its scratch stays, named after that (now gone) process, and is no entry.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    stale = root / f".{weights_cache.entry_name(ref, b'x')}.tmp-{dead}-0123abcd"
    (stale / "tokenizer").mkdir(parents=True)
    (stale / "model.safetensors").write_bytes(FILES["model.safetensors"])
    entry = WeightsCache(root).pull(ref, fits)
    assert [p.name for p in root.iterdir()] == [entry.name], "the dead process's scratch is gone"
    assert (entry / "model.safetensors").read_bytes() == FILES["model.safetensors"]


def test_an_entry_of_an_earlier_process_is_not_trusted_but_pulled_again(ref, tmp_path):
    upload(ref, FILES)
    root = tmp_path / "cache"
    entry = WeightsCache(root).pull(ref, fits)
    (entry / "model.safetensors").write_bytes(b"damaged after the pull")
    assert WeightsCache(root).pull(ref, fits) == entry  # a restarted server
    assert (entry / "model.safetensors").read_bytes() == FILES["model.safetensors"]


def test_a_check_that_refuses_the_manifest_stops_the_pull_before_any_download(ref, tmp_path, monkeypatch):
    upload(ref, FILES)
    monkeypatch.setattr(weights_cache, "read_object_to_file", lambda *a: pytest.fail("downloaded"))

    def other_model(manifest: dict) -> None:
        raise RequestError("path", f"exported by {manifest['backend']}", ref)

    with pytest.raises(RequestError, match="exported by sim"):
        WeightsCache(tmp_path / "cache").pull(ref, other_model)


def test_an_unreachable_store_is_a_503_naming_it(tmp_path, unreachable_object_store):
    cache = WeightsCache(tmp_path / "cache")
    with pytest.raises(UnavailableError, match=f"object store at {unreachable_object_store}"):
        cache.pull("s3://rollflow/nothing/v1", fits)


def test_no_export_at_a_ref_is_a_404(object_store, tmp_path):
    with pytest.raises(NotFoundError, match="no export at s3://rollflow/nothing-here/v1: the store has no object under it"):
        WeightsCache(tmp_path / "cache").pull("s3://rollflow/nothing-here/v1", fits)
