"""Which tests call which function of a repository: one pytest run under a profiler (run by testrun.trace_map).

    python -I tracer.py REPO OUT_JSON PYTEST_INI FILE...

The repository is appended to sys.path and pytest runs as runner.py runs it (fixed ``-c``, no plugin
autoload). A ``sys.setprofile`` hook notes each call of a code object whose file is in the repository and
not a test file, under the test running at the time (its node id). Written to OUT_JSON as
``{"tests": [every node id run], "calls": {"path/to/mod.py:FIRSTLINE": [node ids]}}``. A profiler (calls only) is much cheaper than a line tracer.
"""
import json
import os
import sys
import threading


def main() -> int:
    repo, out, ini, *files = sys.argv[1:]
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.chdir(repo)
    sys.path.append(repo)
    import pytest

    prefix = repo.rstrip("/") + "/"
    calls: dict[str, set] = {}
    current = [None]
    every: list = []
    seen_codes: dict = {}

    def profile(frame, event, arg):
        if event != "call" or current[0] is None:
            return
        code = frame.f_code
        where = seen_codes.get(code)
        if where is None:
            name = code.co_filename
            rel = name[len(prefix):] if name.startswith(prefix) else ""
            base = os.path.basename(rel)
            ok = rel.endswith(".py") and not (base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py")
            where = seen_codes[code] = f"{rel}:{code.co_firstlineno}" if ok else ""
        if where:
            calls.setdefault(where, set()).add(current[0])

    class Plugin:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):
            current[0] = item.nodeid
            every.append(item.nodeid)
            sys.setprofile(profile)
            threading.setprofile(profile)
            yield
            sys.setprofile(None)
            threading.setprofile(None)
            current[0] = None

    pytest.main(["-c", ini, "--rootdir", repo, "--confcutdir", repo, "-p", "no:cacheprovider", "-q", "--", *files], plugins=[Plugin()])
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"tests": every, "calls": {k: sorted(v) for k, v in calls.items()}}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
