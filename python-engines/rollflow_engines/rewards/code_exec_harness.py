"""Runs inside the sandbox for a function-call test of code_exec (not imported by the server).

Reads {"fn_name", "args", "result_file"} from stdin, runs solution.py as a module named "solution" (so its
``if __name__ == "__main__"`` block does not run), calls ``fn_name(*args)`` (a module-level function,
or a method of a class ``Solution`` as in LeetCode-style datasets) and writes the result as JSON to
result_file. The expected value never enters the sandbox: the server compares.
"""
import json
import sys


def main() -> int:
    request = json.loads(sys.stdin.read())
    fn_name = request["fn_name"]
    namespace = {"__name__": "solution"}
    with open("solution.py", encoding="utf-8") as f:
        exec(compile(f.read(), "solution.py", "exec"), namespace)
    fn = namespace.get(fn_name)
    if not callable(fn) and isinstance(namespace.get("Solution"), type):
        fn = getattr(namespace["Solution"](), fn_name, None)
    if not callable(fn):
        print(f"code_exec: solution.py defines no function {fn_name!r} (nor a method of class Solution)", file=sys.stderr)
        return 3
    result = fn(*request["args"])
    with open(request["result_file"], "w", encoding="utf-8") as f:
        json.dump({"result": result}, f, default=repr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
