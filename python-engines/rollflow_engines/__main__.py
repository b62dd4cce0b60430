"""Entry points:

    python -m rollflow_engines serve --role ROLE [--backend B] [--port P] [--config FILE]
    python -m rollflow_engines check [FILE]     (offline config checks; see check.py)
    python -m rollflow_engines track --run-id ID --run-dir DIR --track-with tensorboard,wandb  (trackers/main.py)
"""
from __future__ import annotations

import argparse
import sys

from .config import ConfigError, load_config


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rollflow_engines")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run one engine server")
    serve.add_argument("--config", help="YAML file with the server config; flags override it")
    serve.add_argument("--role", help="inference | trainer | env")
    serve.add_argument("--backend", help="inference: sim|torch|vllm; trainer: sim|torch|megatron; env: python")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--log-level", dest="log_level")
    serve.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                       help="a role/backend setting (dotted keys, YAML values); repeatable")
    check = sub.add_parser("check", help="check engine options and env configs offline; JSON request in, JSON problems out")
    check.add_argument("file", nargs="?", help="the JSON request (default: stdin)")
    return parser.parse_args(argv)


KEEP_ALIVE_S = 75


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["track"]:  # its own arguments (trackers/main.py)
        from .trackers.main import main as track

        return track(argv[1:])
    args = parse_args(argv)
    if args.command == "check":
        from .check import main as check

        return check(args.file)
    overrides = {k: getattr(args, k) for k in ("role", "backend", "host", "port", "log_level")}
    try:
        config = load_config(args.config, overrides, args.option)
    except ConfigError as e:
        print(f"rollflow_engines: {e}", file=sys.stderr)
        return 2

    import uvicorn  # imported late so config errors print fast

    from .app import create_app
    from .sandbox import SandboxUnavailable

    try:
        app = create_app(config)
    except SandboxUnavailable as e:  # the env role cannot sandbox here: say what refused, and do not serve
        print(f"rollflow_engines: the sandbox cannot run on this machine: {e}", file=sys.stderr)
        return 3

    # Idle keep-alive connections must be closed by the client (Node's fetch
    # drops them after 4 s), never by the server: a server closing a socket
    # the client is about to reuse makes that request fail with "other side
    # closed" (UND_ERR_SOCKET). uvicorn's default of 5 s leaves a 1 s margin
    # that a loaded machine overruns.
    uvicorn.run(
        app,
        host=config.host,
        port=config.port,
        log_level=config.log_level,
        timeout_keep_alive=KEEP_ALIVE_S,
        # A line per request costs an env server at hundreds of requests/s a good share of its CPU;
        # log_level debug brings the access log back.
        access_log=config.log_level == "debug",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
