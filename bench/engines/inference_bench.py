"""Benchmarks of the inference role (a script, not a test; numbers go in reports).

(a) torch: decode throughput (completion tokens/s) of the tiny model at batch
    sizes 1, 8, 32: B concurrent requests of --torch-tokens tokens each
    (ignore_eos) after a --torch-prompt-token prompt, in-process through the
    ASGI app with its scheduler running. With --kv-cache-compare each size runs
    without and with the kv_cache option, and the ratio is printed.
(b) sim: requests/s one real server sustains with zero latency: a uvicorn
    server in a child process on loopback, hit by an async httpx client with
    bounded concurrency for a bounded number of requests.

Run from the repo root:
    .venv/bin/python bench/engines/inference_bench.py [--skip-torch] [--skip-sim]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

# sniffio is not installed in this venv; httpcore then re-attempts `import sniffio` (a
# full sys.path scan) on every async request. A None entry makes that import fail fast.
sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]

ENGINES = Path(__file__).resolve().parents[2] / "python-engines"
sys.path.insert(0, str(ENGINES))


async def bench_torch(batch: int, tokens: int, model: str, prompt_tokens: int = 16, kv_cache: bool = False) -> dict:
    from rollflow_engines.app import create_app
    from rollflow_engines.config import ServeConfig

    options = {"model": model, "max_batch": max(batch, 1), "kv_cache": kv_cache}
    app = create_app(ServeConfig(role="inference", backend="torch", options=options))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench", timeout=600) as client:
            async def one(i: int) -> int:
                body = {"prompt": [10 + (i % 50)] * prompt_tokens, "max_tokens": tokens, "temperature": 1.0, "seed": i, "ignore_eos": True}
                r = await client.post("/v1/completions", json=body)
                r.raise_for_status()
                return r.json()["usage"]["completion_tokens"]

            await one(0)  # warm-up: first forward pass allocates
            started = time.perf_counter()
            generated = sum(await asyncio.gather(*(one(i) for i in range(batch))))
            elapsed = time.perf_counter() - started
    return {"batch": batch, "prompt_tokens": prompt_tokens, "kv_cache": kv_cache, "tokens": generated, "seconds": round(elapsed, 3), "tokens_per_s": round(generated / elapsed, 1),
            "ms_per_step": round(1000 * elapsed / tokens, 2)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def drive_httpx(url: str, requests: int, concurrency: int, max_tokens: int) -> tuple[int, float]:
    """``concurrency`` workers, each with its own one-connection httpx.AsyncClient: httpcore's
    shared pool scans every connection on every request, which dominates at 64 connections."""
    todo = iter(range(requests))
    done = 0

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal done
        for i in todo:
            r = await client.post("/v1/completions", json={"prompt": [1, 2, 3, i % 1000], "max_tokens": max_tokens})
            r.raise_for_status()
            done += 1

    clients = [httpx.AsyncClient(base_url=url, limits=httpx.Limits(max_connections=1), timeout=60) for _ in range(concurrency)]
    try:
        for c in clients:  # open the connections before the clock starts
            (await c.post("/v1/completions", json={"prompt": [1], "max_tokens": 1})).raise_for_status()
        started = time.perf_counter()
        await asyncio.gather(*(worker(c) for c in clients))
        return done, time.perf_counter() - started
    finally:
        for c in clients:
            await c.aclose()


async def drive_raw(url: str, requests: int, concurrency: int, max_tokens: int) -> tuple[int, float]:
    """The same load from a minimal keep-alive HTTP/1.1 client on asyncio streams: it costs the
    client ~20x less CPU than httpx, so on a 2-core machine it measures the server, not the client."""
    host, port = url.removeprefix("http://").split(":")
    todo = iter(range(requests))
    done = 0

    async def worker() -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for i in todo:
                body = json.dumps({"prompt": [1, 2, 3, i % 1000], "max_tokens": max_tokens}).encode()
                writer.write(b"POST /v1/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(body), body))
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 200"):
                    raise RuntimeError(f"server answered {head[:60]!r}")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
                json.loads(await reader.readexactly(length))
                done += 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done, time.perf_counter() - started


def bench_sim(client: str, requests: int, concurrency: int, max_tokens: int) -> dict:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ENGINES)}
    cmd = [sys.executable, "-m", "rollflow_engines", "serve", "--role", "inference", "--backend", "sim", "--port", str(port),
           "--log-level", "warning", "--option", f"sim.length.mean={max_tokens}", "--option", "max_batch=1024"]
    with subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as server:
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                if server.poll() is not None:
                    raise RuntimeError(f"sim server exited: {server.stderr.read() if server.stderr else ''}")
                try:
                    httpx.get(f"{url}/health", timeout=2)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("sim server never answered") from None
                    time.sleep(0.1)
            drive = drive_httpx if client == "httpx" else drive_raw
            server_cpu = cpu_seconds(server.pid)
            client_cpu = time.process_time()
            done, elapsed = asyncio.run(drive(url, requests, concurrency, max_tokens))
            server_cpu = cpu_seconds(server.pid) - server_cpu
            client_cpu = time.process_time() - client_cpu
            metrics = httpx.get(f"{url}/metrics", timeout=10).text
        finally:
            server.terminate()
            server.wait(timeout=30)
    tokens = next(float(line.split()[1]) for line in metrics.splitlines() if line.startswith("rollflow_inference_tokens_generated_total"))
    return {"client": client, "requests": done, "concurrency": concurrency, "tokens_per_request": max_tokens,
            "seconds": round(elapsed, 3), "requests_per_s": round(done / elapsed, 1),
            "server_cpu_ms_per_request": round(1000 * server_cpu / done, 3),
            "client_cpu_ms_per_request": round(1000 * client_cpu / done, 3), "server_tokens_generated": tokens}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-torch", action="store_true")
    parser.add_argument("--skip-sim", action="store_true")
    parser.add_argument("--torch-model", default="tiny:default")
    parser.add_argument("--torch-batches", default="1,8,32")
    parser.add_argument("--torch-tokens", type=int, default=64, help="tokens per request")
    parser.add_argument("--torch-prompt", type=int, default=16, help="prompt tokens per request")
    parser.add_argument("--kv-cache-compare", action="store_true", help="each batch size without and with kv_cache")
    parser.add_argument("--sim-requests", type=int, default=10_000)
    parser.add_argument("--sim-concurrency", type=int, default=64)
    parser.add_argument("--sim-tokens", type=int, default=16, help="response length of every sim request")
    parser.add_argument("--sim-clients", default="raw,httpx", help="load generators to run: raw, httpx or both")
    args = parser.parse_args()

    results: dict = {"cpus": os.cpu_count()}
    if not args.skip_torch:
        results["torch"] = []
        for b in args.torch_batches.split(","):
            rows = [asyncio.run(bench_torch(int(b), args.torch_tokens, args.torch_model, args.torch_prompt, kv))
                    for kv in ((False, True) if args.kv_cache_compare else (False,))]
            for row in rows:
                print(f"torch {args.torch_model} batch {row['batch']:>3}, prompt {row['prompt_tokens']}, kv_cache {row['kv_cache']}: "
                      f"{row['tokens_per_s']:>8} tokens/s ({row['ms_per_step']} ms/step, {row['tokens']} tokens in {row['seconds']} s)", flush=True)
            if len(rows) == 2:
                print(f"  kv_cache / recomputing: {rows[1]['tokens_per_s'] / rows[0]['tokens_per_s']:.2f}x the tokens/s", flush=True)
            results["torch"] += rows
    if not args.skip_sim:
        results["sim"] = []
        for client in args.sim_clients.split(","):
            results["sim"].append(row := bench_sim(client, args.sim_requests, args.sim_concurrency, args.sim_tokens))
            print(f"sim zero-latency, {client} client: {row['requests_per_s']} requests/s ({row['requests']} requests of "
                  f"{row['tokens_per_request']} tokens, concurrency {row['concurrency']}, {row['seconds']} s; CPU per request: "
                  f"server {row['server_cpu_ms_per_request']} ms, client {row['client_cpu_ms_per_request']} ms)", flush=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
