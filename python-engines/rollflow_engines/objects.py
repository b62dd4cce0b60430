"""Objects in the S3-compatible store of the data plane, named by refs ``s3://<bucket>/<key>``.

The format is a contract the TypeScript writer follows too: every object carries user metadata ``sha256``
(the lowercase hex SHA-256 of its whole body), objects over 8 MiB are written multipart, and a reader refuses an
object whose body does not match its ``sha256`` or that has none. That check, by every reader over the whole
body, is what integrity rests on; a writer's checksums only make a body damaged on its way in fail the write
rather than the later reads.

How this writer checks its uploads (the TypeScript one asks for SHA-256 instead; readers see no difference): the
server checks each request's body against a CRC32 (``ChecksumAlgorithm=CRC32``, cheap next to a second SHA-256
pass), and the body is not signed (SigV4 ``UNSIGNED-PAYLOAD``, what boto3 does over TLS whenever a checksum is
sent; without it, over plain HTTP, boto3 hashes every body once more to sign it). The ``sha256`` metadata header
is still signed, so a body altered on its way in cannot carry a matching digest: every reader refuses it.

Endpoint, region and credentials come only from the standard AWS environment variables and files
(``object-store/versitygw.sh env`` prints the two that point at a local store), never from a run config.
"""
from __future__ import annotations

import hashlib
import io
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

SCHEME = "s3://"
SHA256_METADATA = "sha256"
# Bucket names as S3 allows them (lowercase letters, digits, dots, hyphens; 3-63 characters).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_MISSING = {"NoSuchKey", "NoSuchBucket"}

MULTIPART_ABOVE = 8 * 1024 * 1024
_CHUNK = 8 * 1024 * 1024  # streamed reads and file digests go this many bytes at a time
_WRITE_CHECKSUM = "CRC32"  # the server's check of each body on its way in (see the module docstring)
_TRANSFER = TransferConfig(
    # s3transfer goes multipart at size >= threshold; the contract (and lib-storage) at size > one part.
    multipart_threshold=MULTIPART_ABOVE + 1,
    multipart_chunksize=MULTIPART_ABOVE,
    # The CRT transfer client, where installed, chooses its own part sizes.
    preferred_transfer_client="classic",
)


class ObjectRefError(ValueError):
    """Thrown when a ref is not of the form s3://<bucket>/<key>."""


class ObjectNotFoundError(Exception):
    """Thrown when the store has no object (or no bucket) at a ref."""


class CorruptObjectError(Exception):
    """Thrown when an object's body does not match its sha256 metadata, or it has none: its bytes are not trusted."""

    def __init__(self, ref: str, expected: str | None, actual: str):
        wanted = f"sha256 metadata {expected}" if expected else "no sha256 metadata"
        super().__init__(f"{ref} is corrupt: its body has sha256 {actual}, the object has {wanted}")
        self.ref, self.expected, self.actual = ref, expected, actual


class ObjectStoreError(Exception):
    """Thrown when the store could not serve a request (unreachable, refused the credentials, misconfigured):
    the ref may be fine and a retry may succeed. Names the endpoint."""


@dataclass(frozen=True)
class ObjectRef:
    bucket: str
    key: str

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.key}"


def is_object_ref(ref: str) -> bool:
    return ref.startswith(SCHEME)


def parse_object_ref(ref: str) -> ObjectRef:
    bucket, slash, key = ref[len(SCHEME):].partition("/") if is_object_ref(ref) else ("", "", "")
    if not (_BUCKET.fullmatch(bucket) and slash and key and not key.startswith("/")):
        raise ObjectRefError(f"{ref!r} is not an object ref: expected s3://<bucket>/<key>")
    return ObjectRef(bucket, key)


_client: BaseClient | None = None
_client_lock = threading.Lock()


def client() -> BaseClient:
    """The process's one S3 client (boto3 clients are thread-safe once made; making one is not)."""
    global _client
    with _client_lock:
        if _client is None:
            # Response checksum validation off: the sha256 check below is the one check, over single-part and
            # multipart objects alike, and its error names both digests. Payload signing off: see the module docstring.
            config = Config(response_checksum_validation="when_required", s3={"payload_signing_enabled": False})
            try:
                _client = boto3.session.Session().client("s3", config=config)
            except BotoCoreError as e:
                raise ObjectStoreError(f"cannot make an S3 client from the AWS environment variables and files: {e}") from e
        return _client


def reset_client() -> None:
    """Close and forget the client, so the next one reads the AWS environment again (tests that start their own store)."""
    global _client
    with _client_lock:
        if _client is not None:
            _client.close()
        _client = None


def read_object(ref: str) -> bytes:
    """The object's body, verified against its sha256 metadata."""
    where, s3 = parse_object_ref(ref), client()
    try:
        got = s3.get_object(Bucket=where.bucket, Key=where.key)
        body = got["Body"].read()
    except (ClientError, BotoCoreError) as e:
        raise _read_error(s3, ref, e) from e
    _verify(ref, got, hashlib.sha256(body).hexdigest())
    return body


def read_object_to_file(ref: str, path: Path) -> str:
    """Streams the object into a new file at ``path`` (a large object never sits in memory whole), verified against
    its sha256 metadata as read_object verifies it; returns the sha256. A refused object leaves no file."""
    where, s3 = parse_object_ref(ref), client()
    digest = hashlib.sha256()
    try:
        try:
            got = s3.get_object(Bucket=where.bucket, Key=where.key)
            # One chunk is hashed on another thread (hashlib lets go of the GIL) while it is written and the next is
            # read off the socket; waiting for the last hash before handing over the next keeps the order and at most
            # two chunks in memory.
            with open(path, "wb") as f, ThreadPoolExecutor(1, thread_name_prefix="sha256") as hasher:
                hashed: Future | None = None
                for chunk in got["Body"].iter_chunks(_CHUNK):
                    if hashed is not None:
                        hashed.result()
                    hashed = hasher.submit(digest.update, chunk)
                    f.write(chunk)
                if hashed is not None:
                    hashed.result()
        except (ClientError, BotoCoreError) as e:
            raise _read_error(s3, ref, e) from e
        _verify(ref, got, digest.hexdigest())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return digest.hexdigest()


def write_object(ref: str, data: bytes) -> None:
    """Writes the whole object or nothing: a single put, or a multipart upload that is aborted if any part fails."""
    sha256 = hashlib.sha256(data).hexdigest()
    if len(data) > MULTIPART_ABOVE:
        _upload(ref, io.BytesIO(data), sha256)
        return
    # One put, without the transfer manager: it makes its own futures and threads for every upload, 0.9 of the
    # 2.6 ms a 1.5 KB write took against a local versitygw (env snapshots write one or two such objects a step).
    where, s3 = parse_object_ref(ref), client()
    try:
        s3.put_object(Bucket=where.bucket, Key=where.key, Body=data, **_put_args(sha256))
    except (ClientError, BotoCoreError) as e:
        raise _store_error(s3, "writing", ref, e) from e


def write_object_from_file(ref: str, path: Path, sha256: str | None = None) -> str:
    """write_object of the file at ``path``, streamed from the disk rather than read into memory; returns its sha256.
    ``sha256``: the file's digest where the caller has just taken it (an export's manifest lists it), so the file is
    not read once more to hash it; were it wrong, every reader would refuse the object."""
    digest = sha256 or file_sha256(path)
    with open(path, "rb") as f:
        _upload(ref, f, digest)
    return digest


@dataclass(frozen=True)
class ListedObject:
    ref: str
    modified: float  # when the store finished writing it (its LastModified), in seconds since the epoch


def list_objects(prefix: str) -> list[str]:
    """The refs of every object whose key starts with the key of ``prefix`` (an s3:// ref), in key order."""
    return [o.ref for o in list_objects_modified(prefix)]


def list_objects_modified(prefix: str) -> list[ListedObject]:
    """list_objects, with when each object was written (for what goes by age: env snapshots)."""
    where, s3 = parse_object_ref(prefix), client()
    found: list[ListedObject] = []
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=where.bucket, Prefix=where.key):
            found.extend(ListedObject(str(ObjectRef(where.bucket, o["Key"])), o["LastModified"].timestamp()) for o in page.get("Contents", []))
    except (ClientError, BotoCoreError) as e:
        raise _read_error(s3, prefix, e) from e
    return found


def delete_object(ref: str) -> None:
    """Removes the object (nothing to do if there is none)."""
    where, s3 = parse_object_ref(ref), client()
    try:
        s3.delete_object(Bucket=where.bucket, Key=where.key)
    except (ClientError, BotoCoreError) as e:
        raise _store_error(s3, "deleting", ref, e) from e


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _put_args(sha256: str) -> dict:
    return {"Metadata": {SHA256_METADATA: sha256}, "ChecksumAlgorithm": _WRITE_CHECKSUM}


def _upload(ref: str, body: BinaryIO, sha256: str) -> None:
    where, s3 = parse_object_ref(ref), client()
    try:
        s3.upload_fileobj(body, where.bucket, where.key, ExtraArgs=_put_args(sha256), Config=_TRANSFER)
    except (ClientError, BotoCoreError) as e:
        raise _store_error(s3, "writing", ref, e) from e


def _verify(ref: str, got: dict, actual: str) -> None:
    expected = got.get("Metadata", {}).get(SHA256_METADATA)
    if expected != actual:
        raise CorruptObjectError(ref, expected, actual)


def _read_error(s3: BaseClient, ref: str, e: Exception) -> Exception:
    if isinstance(e, ClientError) and e.response.get("Error", {}).get("Code") in _MISSING:
        return ObjectNotFoundError(f"no such object: {ref} ({e.response['Error'].get('Message', '')})")
    return _store_error(s3, "reading", ref, e)


def _store_error(s3: BaseClient, doing: str, ref: str, e: Exception) -> ObjectStoreError:
    return ObjectStoreError(f"object store at {s3.meta.endpoint_url} failed {doing} {ref}: {e}")
