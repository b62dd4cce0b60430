"""``python -m rollflow_engines track``: the trackers of one run, fed JSON lines on stdin.

Input lines:
    {"kind": "config", "config": {...}}                     the run config, once
    {"kind": "record", "file": "metrics.jsonl"|"validation.jsonl", "record": {...}}
Output lines (stdout), one per input line, so the worker knows each was handled:
    {"ok": true} or {"ok": false, "errors": [{"tracker": "...", "error": "..."}]}

A tracker that fails is reported and dropped; the others go on, and the
process never exits for a tracker's error (a run is never failed by one).
Ends at EOF, closing each tracker (wandb finishes its run).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

from .sinks import Sink, TensorboardSink, WandbSink


VAL_PREFIX = "val/"  # VAL_METRIC's prefix (src/core/metrics.ts)


def numeric(record: dict[str, Any], file: str = "metrics.jsonl") -> dict[str, float]:
    """The record's numbers as series, booleans excluded; step is the x axis and run_id a label.

    A validation record's own keys already start with val/; its others (version, wall_s) get it too, so
    they do not land in the step records' series of the same name (in wandb the later one would replace
    the other at a shared step)."""
    prefix = VAL_PREFIX if file == "validation.jsonl" else ""
    return {(k if k.startswith(prefix) else prefix + k): float(v) for k, v in record.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in ("step", "run_id")}


def open_sinks(args: argparse.Namespace, errors: list[dict[str, str]]) -> list[Sink]:
    kwargs = json.loads(args.kwargs)
    sinks: list[Sink] = []
    for name in args.track_with.split(","):
        try:
            if name == "tensorboard":
                sinks.append(TensorboardSink(kwargs.get("log_dir") or f"{args.run_dir}/tensorboard"))
            elif name == "wandb":
                sinks.append(WandbSink(args.run_id, kwargs.get("project") or "rollflow", kwargs.get("name"),
                                       kwargs.get("log_dir") or args.run_dir, kwargs.get("tags") or [], kwargs.get("notes")))
            else:
                raise ValueError(f"unknown tracker {name!r}: expected tensorboard or wandb")
        except Exception as e:  # noqa: BLE001 - any failure of a tracker library is reported, never fatal
            errors.append({"tracker": name, "error": f"{type(e).__name__}: {e}"})
    return sinks


def handle(sinks: list[Sink], msg: dict[str, Any]) -> list[dict[str, str]]:
    errors: list[dict[str, str]] = []
    for sink in list(sinks):
        try:
            if msg["kind"] == "config":
                sink.config(msg["config"])
            else:
                record = msg["record"]
                sink.log(int(record["step"]), numeric(record, msg.get("file", "metrics.jsonl")))
        except Exception as e:  # noqa: BLE001
            errors.append({"tracker": sink.name, "error": f"{type(e).__name__}: {e}"})
            sinks.remove(sink)  # a tracker that failed once is not tried again in this process
    return errors


def private_stdout() -> TextIO:
    """The answers' own copy of stdout; fd 1 itself then goes to stderr.

    The worker reads one answer line per input line, in order: anything else on stdout (a library's
    print, a child process such as wandb's service, which inherits fd 1) would be taken for an answer."""
    answers = os.fdopen(os.dup(1), "w")
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return answers


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="rollflow_engines track")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--track-with", required=True, help="comma-separated: tensorboard,wandb")
    parser.add_argument("--kwargs", default="{}", help="tracker_kwargs as JSON")
    args = parser.parse_args(argv)
    answers = private_stdout()
    opening: list[dict[str, str]] = []
    sinks = open_sinks(args, opening)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            errors = opening + handle(sinks, json.loads(line))
        except (ValueError, KeyError, TypeError) as e:
            errors = opening + [{"tracker": "-", "error": f"unreadable line: {e}"}]
        opening = []
        print(json.dumps({"ok": not errors, "errors": errors}), file=answers, flush=True)
    for sink in sinks:
        try:
            sink.close()
        except Exception as e:  # noqa: BLE001
            print(json.dumps({"ok": False, "errors": [{"tracker": sink.name, "error": f"close: {e}"}]}), file=answers, flush=True)
    return 0
