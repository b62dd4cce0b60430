"""objects.py against a real versitygw: the format contract (sha256 metadata, multipart over 8 MiB), how a write
is checked (a CRC32 the server verifies, the sha256 metadata signed, the body not) and the refusals (no object, a
flipped byte, no metadata, a body damaged on its way in, no store)."""
import hashlib
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from rollflow_engines.objects import (MULTIPART_ABOVE, CorruptObjectError, ObjectNotFoundError, ObjectRef, ObjectRefError,
                                      ObjectStoreError, client, is_object_ref, parse_object_ref, read_object, read_object_to_file,
                                      write_object, write_object_from_file)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_small_object_round_trips_with_its_sha256_and_lies_on_disk_as_written(object_store):
    data = b'{"uid": "a"}\n{"uid": "b"}\n'
    ref = object_store.ref("round-trip/step-000000.jsonl")
    write_object(ref, data)
    assert read_object(ref) == data
    head = client().head_object(Bucket="rollflow", Key="round-trip/step-000000.jsonl")
    assert head["Metadata"] == {"sha256": sha256(data)}
    assert object_store.file_of("round-trip/step-000000.jsonl").read_bytes() == data


@pytest.mark.parametrize("ref", ["s3://rollflow/never-written.jsonl", "s3://no-such-bucket/x.jsonl"])
def test_a_missing_object_or_bucket_is_not_found(object_store, ref):
    with pytest.raises(ObjectNotFoundError, match=f"no such object: {ref}"):
        read_object(ref)


def test_a_byte_flipped_on_disk_is_refused_naming_both_digests(object_store):
    data = b"0123456789" * 100
    ref = object_store.ref("flipped/batch.jsonl")
    write_object(ref, data)
    file = object_store.file_of("flipped/batch.jsonl")
    flipped = bytearray(file.read_bytes())
    flipped[500] ^= 0x01
    file.write_bytes(bytes(flipped))
    with pytest.raises(CorruptObjectError) as refused:
        read_object(ref)
    assert (refused.value.expected, refused.value.actual) == (sha256(data), sha256(bytes(flipped)))
    message = str(refused.value)
    assert ref in message and sha256(data) in message and sha256(bytes(flipped)) in message


def test_an_object_without_sha256_metadata_is_refused(object_store):
    client().put_object(Bucket="rollflow", Key="foreign/batch.jsonl", Body=b"[]")
    with pytest.raises(CorruptObjectError, match="no sha256 metadata") as refused:
        read_object(object_store.ref("foreign/batch.jsonl"))
    assert refused.value.actual == sha256(b"[]")


@pytest.mark.parametrize("size, parts", [
    (MULTIPART_ABOVE, None),       # exactly 8 MiB: one PutObject (a plain ETag)
    (MULTIPART_ABOVE + 1, 2),      # one byte more: multipart, 8 MiB + 1 byte
    (20 * 1024 * 1024, 3),         # 20 MiB: parts of 8 + 8 + 4 MiB
])
def test_objects_over_8_mib_are_written_multipart_and_read_back_verified(object_store, size, parts):
    data = hashlib.shake_256(str(size).encode()).digest(size)
    key = f"large/{size}.bin"
    write_object(object_store.ref(key), data)
    etag = client().head_object(Bucket="rollflow", Key=key)["ETag"].strip('"')
    assert etag.endswith(f"-{parts}") if parts else "-" not in etag
    assert read_object(object_store.ref(key)) == data


def test_a_large_object_streamed_to_a_file_is_verified_and_a_damaged_one_leaves_no_file(object_store, tmp_path):
    data = hashlib.shake_256(b"streamed").digest(20 * 1024 * 1024)  # read in three chunks, each hashed beside the next read
    write_object(object_store.ref("streamed/weights.bin"), data)
    assert read_object_to_file(object_store.ref("streamed/weights.bin"), tmp_path / "got") == sha256(data)
    assert (tmp_path / "got").read_bytes() == data
    file = object_store.file_of("streamed/weights.bin")
    flipped = bytearray(data)
    flipped[-1] ^= 0x01
    file.write_bytes(bytes(flipped))
    with pytest.raises(CorruptObjectError):
        read_object_to_file(object_store.ref("streamed/weights.bin"), tmp_path / "refused")
    assert not (tmp_path / "refused").exists()


def test_a_file_written_with_its_given_sha256_is_not_hashed_again_and_a_wrong_one_is_refused_by_readers(object_store, tmp_path):
    file = tmp_path / "weights.bin"
    file.write_bytes(b"weights")
    assert write_object_from_file(object_store.ref("given/right.bin"), file, sha256=sha256(b"weights")) == sha256(b"weights")
    assert read_object(object_store.ref("given/right.bin")) == b"weights"
    write_object_from_file(object_store.ref("given/wrong.bin"), file, sha256=sha256(b"other weights"))
    with pytest.raises(CorruptObjectError):
        read_object(object_store.ref("given/wrong.bin"))


def test_every_write_carries_a_crc32_for_the_server_and_signs_the_sha256_metadata_not_the_body(object_store):
    sent = []
    client().meta.events.register("before-send.s3", lambda request, **_: sent.append(request))
    data = hashlib.shake_256(b"checked").digest(MULTIPART_ABOVE + 1)
    write_object(object_store.ref("checked/large.bin"), data)
    write_object(object_store.ref("checked/small.bin"), b"small")
    signed = [set(re.search(r"SignedHeaders=([^,]+)", r.headers["Authorization"].decode()).group(1).split(";")) for r in sent]
    assert all(r.headers["X-Amz-Content-SHA256"] == b"UNSIGNED-PAYLOAD" for r in sent)
    bodies = [(r, h) for r, h in zip(sent, signed) if r.method == "PUT"]  # two parts, one single put
    assert len(bodies) == 3 and all("x-amz-checksum-crc32" in h for _, h in bodies)
    with_metadata = [h for r, h in zip(sent, signed) if "x-amz-meta-sha256" in r.headers]  # the multipart upload's start, the put
    assert len(with_metadata) == 2 and all("x-amz-meta-sha256" in h for h in with_metadata)


@pytest.mark.parametrize("size", [100, MULTIPART_ABOVE + 1])
def test_a_body_damaged_on_its_way_in_fails_the_write_and_leaves_no_object(object_store, size):
    def damage(request, **_):
        if request.method == "PUT" and request.body is not None:
            body = bytearray(request.body.read() if hasattr(request.body, "read") else request.body)
            body[0] ^= 0x01
            request.body = bytes(body)

    client().meta.events.register("before-send.s3", damage)
    with pytest.raises(ObjectStoreError, match="BadDigest"):
        write_object(object_store.ref(f"damaged/{size}.bin"), b"w" * size)
    with pytest.raises(ObjectNotFoundError):
        read_object(object_store.ref(f"damaged/{size}.bin"))


@pytest.mark.parametrize("ref", ["rollflow/x.jsonl", "s3://", "s3://rollflow", "s3://rollflow/", "s3://Bad_Bucket/x",
                                 "s3:///x.jsonl", "s3://rollflow//x.jsonl", "/runs/batches/step-000000.jsonl"])
def test_malformed_refs_are_refused_by_name(ref):
    with pytest.raises(ObjectRefError, match="expected s3://<bucket>/<key>"):
        parse_object_ref(ref)


def test_refs_parse_into_bucket_and_key_and_back():
    ref = "s3://rollflow/run-1/batches/step-000003.jsonl"
    assert is_object_ref(ref) and not is_object_ref("/tmp/run-1/batches/step-000003.jsonl")
    assert parse_object_ref(ref) == ObjectRef("rollflow", "run-1/batches/step-000003.jsonl")
    assert str(parse_object_ref(ref)) == ref


def test_threads_asking_at_once_share_one_client(object_store):
    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda _: client(), range(32)))
    assert len({id(c) for c in made}) == 1


def test_an_unreachable_store_is_an_error_naming_its_endpoint(unreachable_object_store):
    with pytest.raises(ObjectStoreError, match=f"object store at {unreachable_object_store} failed reading s3://rollflow/x"):
        read_object("s3://rollflow/x")
    with pytest.raises(ObjectStoreError, match=f"object store at {unreachable_object_store} failed writing s3://rollflow/x"):
        write_object("s3://rollflow/x", b"x")
