"""Reads a wandb offline run's transaction log (run-<id>.wandb) with wandb's own protobuf records.

The file is a LevelDB-style log (wandb's datastore): a 7-byte header, then
32 KiB blocks of records, each a 7-byte header (crc32, length, type:
1 full, 2 first, 3 middle, 4 last) and its bytes. wandb 0.31 ships no Python
reader (its Go core writes the file), so the tests read it here.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2 as pb

BLOCK = 32 * 1024
HEADER = 7


def records(path: Path) -> list[pb.Record]:
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a wandb log"
    pos, pending, out = HEADER, b"", []
    while pos + HEADER <= len(data):
        if BLOCK - pos % BLOCK < HEADER:  # a block's tail too short for a header is padding
            pos += BLOCK - pos % BLOCK
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        if length == 0 and kind == 0:
            break
        chunk, pos = data[pos + HEADER:pos + HEADER + length], pos + HEADER + length
        if kind in (1, 2):
            pending = chunk
        else:
            pending += chunk
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(pending)
            out.append(rec)
    return out


def _key(item: Any) -> str:
    return item.key or "/".join(item.nested_key)


def history(path: Path) -> list[dict[str, Any]]:
    return [{_key(i): json.loads(i.value_json) for i in r.history.item} for r in records(path) if r.WhichOneof("record_type") == "history"]


def config(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in records(path):
        if r.WhichOneof("record_type") == "config":
            out.update({_key(i): json.loads(i.value_json) for i in r.config.update})
        if r.WhichOneof("record_type") == "run":
            out.update({_key(i): json.loads(i.value_json) for i in r.run.config.update})
    return out
