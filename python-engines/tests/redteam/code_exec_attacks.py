"""The attacks of test_code_exec_attacks.py: programs a policy could write against code_exec, each named
after what it tries. Call-style programs define ``solve(a, b)`` (expected: 5); stdio ones read "2 3"."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

CALL = {"style": "call", "fn_name": "solve", "tests": [{"args": [2, 3], "expected": 5}]}
STDIO = {"style": "stdio", "tests": [{"input": "2 3\n", "output": "5\n"}]}
MARKER = "expected-8d0c4f1e-never-in-the-sandbox"
FAST = {"limits": {"wall_s": 3, "cpu_s": 2}}


@dataclass(frozen=True)
class Attack:
    name: str
    program: str
    reference: dict = field(default_factory=lambda: CALL)
    reward: float = 0.0
    reason: str | None = None  # a part of first_failure.reason (None: any failure, or none for reward 1)
    config: dict[str, Any] = field(default_factory=dict)
    time_limit_s: float = 60.0  # reward_timeout_s
    timeout: bool = False  # info.timeout: the verification's deadline (not only a test's wall clock) cut it

    @property
    def reference_text(self) -> str:
        return json.dumps(self.reference)


def _exits_after(body: str) -> str:
    """A solve() that does ``body`` in the workspace, then exits 0 before the harness writes its result."""
    return "import os\ndef solve(a, b):\n" + "".join(f"    {line}\n" for line in body.splitlines()) + "    os._exit(0)\n"


ATTACKS = [
    # The result file the server reads back, made into something else.
    Attack("fifo_result_file", _exits_after("os.mkfifo('result-0.json')"), reason="not a regular file"),
    Attack("fifo_blocks_the_harness", "import os\ndef solve(a, b):\n    os.mkfifo('result-0.json')\n    return a + b\n",
           reason="timed out", config=FAST),
    Attack("symlink_result_to_host_file", _exits_after("os.symlink('/etc/shadow', 'result-0.json')"), reason="symlink"),
    Attack("symlink_result_to_dev_zero", _exits_after("os.symlink('/dev/zero', 'result-0.json')"), reason="symlink"),
    Attack("symlink_result_to_own_file", _exits_after("open('mine.json', 'w').write('{\"result\": 5}')\n"
                                                       "os.symlink('mine.json', 'result-0.json')"), reason="symlink"),
    Attack("symlink_loop_result", _exits_after("os.symlink('result-0.json', 'result-0.json')"), reason="symlink"),
    Attack("result_file_is_directory", _exits_after("os.mkdir('result-0.json')"), reason="not a regular file"),
    Attack("huge_result_file", _exits_after("with open('result-0.json', 'w') as f:\n"
                                            "    f.write('{\"result\": [' + '0,' * (5 << 20) + '0]}')"),
           reason="bytes (at most", config={"limits": {"max_file_mb": 16}}),
    Attack("sparse_huge_result_file", _exits_after("with open('result-0.json', 'w') as f:\n    f.truncate(15 << 20)"),
           reason="bytes (at most", config={"limits": {"max_file_mb": 16}}),
    Attack("deeply_nested_result_json", _exits_after("open('result-0.json', 'w').write('{\"result\": ' + '[' * 1000000 + ']' * 1000000 + '}')"),
           reason="deeper than JSON parsing allows"),
    Attack("nested_past_the_depth_cap", _exits_after("open('result-0.json', 'w').write('{\"result\": ' + '[' * 150 + '5' + ']' * 150 + '}')"),
           reason="deeper than 100 levels"),
    Attack("nan_result", "def solve(a, b):\n    return float('nan')\n", reason="wrong answer"),
    Attack("infinity_in_result_json", _exits_after("open('result-0.json', 'w').write('{\"result\": Infinity}')"), reason="wrong answer"),
    Attack("non_json_result", _exits_after("open('result-0.json', 'w').write('five')"), reason="not JSON"),
    Attack("result_not_an_object", _exits_after("open('result-0.json', 'w').write('[5]')"), reason="not an object"),
    Attack("integer_past_the_digit_limit", _exits_after("open('result-0.json', 'w').write('{\"result\": ' + '9' * 5000 + '}')"),
           reason="not JSON"),
    Attack("huge_integer_against_a_float", "def solve(a, b):\n    return 10 ** 400\n",
           reference={**CALL, "tests": [{"args": [2, 3], "expected": 0.5}]}, reason="wrong answer"),
    Attack("invalid_utf8_result", _exits_after("open('result-0.json', 'wb').write(b'{\"result\": \"\\xff\\xfe\"}')"), reason="wrong answer"),
    Attack("nul_in_result_json", _exits_after("open('result-0.json', 'w').write('{\"result\": \"\\x00\"}')"), reason="not JSON"),
    Attack("lone_surrogate_result", "def solve(a, b):\n    return '\\ud800' * 1000\n", reason="wrong answer"),
    Attack("always_equal_object", "class E:\n    def __eq__(self, other):\n        return True\n"
                                  "def solve(a, b):\n    return E()\n", reason="wrong answer"),
    Attack("recursive_list_result", "def solve(a, b):\n    x = []\n    x.append(x)\n    return x\n", reason="crashed"),
    Attack("exit_zero_without_result", _exits_after("pass"), reason="does not exist"),
    Attack("correct_result_then_crash", "import json, sys\ndef solve(a, b):\n    json.dump({'result': 5}, open('result-0.json', 'w'))\n"
                                        "    sys.exit(1)\n", reason="crashed"),
    # The marker is spelled backwards in the program, so that solution.py itself does not hold it.
    Attack("search_for_the_expected_value", "import glob, os, sys\ndef solve(a, b):\n    needle = '" + MARKER[::-1] + "'[::-1]\n"
           "    for path in glob.glob('/workspace/**', recursive=True) + glob.glob('/tmp/**', recursive=True) + glob.glob('/proc/*/*'):\n"
           "        try:\n            if os.path.isfile(path) and needle in open(path, errors='replace').read(1 << 20):\n"
           "                return 'found in ' + path\n        except OSError:\n            pass\n    return 'not found'\n",
           reference={**CALL, "tests": [{"args": [2, 3], "expected": MARKER}]}, reason="not found"),
    Attack("lock_the_workspace", _exits_after("os.chmod('.', 0)"), reason="no result"),
    # stdout and processes.
    Attack("stdout_flood", "import sys\nsys.stdout.write('x' * 50_000_000)\n", reference=STDIO, reason="wrong answer"),
    Attack("stderr_flood_then_correct", "import sys\nsys.stderr.write('x' * 50_000_000)\nprint(5)\n", reference=STDIO, reward=1.0),
    Attack("stdout_closed", "import os\nos.close(1)\nprint(5)\n", reference=STDIO),
    Attack("stdout_redirected", "import os, sys\nsys.stdout = open(os.devnull, 'w')\nprint(5)\n", reference=STDIO, reason="wrong answer"),
    Attack("prints_nothing", "pass\n", reference=STDIO, reason="wrong answer"),
    Attack("control_characters_in_output", "print('\\x00\\x1b[2J\\x07\\x7f 5')\n", reference=STDIO, reason="wrong answer"),
    Attack("invalid_utf8_output", "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe5\\n')\n", reference=STDIO, reason="wrong answer"),
    Attack("fork_and_hang", "import os, time\nif os.fork() == 0:\n    time.sleep(1000)\nprint(5)\n", reference=STDIO, reward=1.0),
    Attack("daemonize_and_hang", "import os, sys, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                                 "        os.close(1)\n        os.close(2)\n        time.sleep(1000)\n    os._exit(0)\nprint(5)\n",
           reference=STDIO, reward=1.0),
    Attack("kill_its_parent", "import os\ntry:\n    os.kill(os.getppid(), 9)\nexcept OSError:\n    pass\nprint(5)\n", reference=STDIO, reward=1.0),
    Attack("kill_every_process", "import os\nprint(5, flush=True)\nos.kill(-1, 9)\n", reference=STDIO),
    Attack("fork_bomb", "import os\nwhile True:\n    os.fork()\n", reference=STDIO, config=FAST),
    Attack("memory_bomb", "x = bytearray(10 ** 10)\nprint(5)\n", reference=STDIO, reason="crashed"),
    Attack("cpu_spin", "while True:\n    pass\n", reference=STDIO, reason="timed out", config=FAST),
    Attack("sleep_past_deadline", "import time\ntime.sleep(1000)\nprint(5)\n", reference=STDIO, reason="timed out",
           config={"limits": {"wall_s": 60}}, time_limit_s=3, timeout=True),
    # The response text itself.
    Attack("nul_bytes_in_code", "print(5)\x00\n", reference=STDIO, reason="crashed"),
    Attack("megabyte_of_fences", "```py" * 200_000, reference=STDIO, reason="crashed"),
    Attack("correct_after_a_megabyte_of_prose", "lorem ipsum " * 80_000 + "```python\nprint(sum(map(int, input().split())))\n```",
           reference=STDIO, reward=1.0),
]
