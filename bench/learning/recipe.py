"""GRPO directly on the python backends, in one process: the research loop that chose the learning recipe (bench/results/learning.md).

Each step: B prompts (env seeds), G samples each from the torch inference
engine, rewards from the env, one train step of the torch trainer (GRPO
advantages, the chosen pg loss), export of the new weights and a weight update
of the engine — the same calls the Temporal workflows make, minus the
orchestration. Multi-turn envs (frozen_lake) are played turn by turn with the
token layout of a rollout: the env's tokens between turns are in the response
with loss_mask 0.

Run from the repo root (prints one line per step and a JSON summary, and
appends the summary to --results):

    .venv/bin/python bench/learning/recipe.py --model tiny:small+warm:add --steps 40
    .venv/bin/python bench/learning/recipe.py --env frozen_lake --model tiny:small+warm:lake \\
        --env-config '{"map_size": 4, "max_turns": 10, "render": "compact"}' --max-new-tokens 8

A warm-start can be varied without registering it: --warm-base names the
registered spec and --warm-override changes fields (JSON), e.g.
--warm-base add --warm-override '{"steps": 300, "correct_prob": 0.2}'.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

# ROLLFLOW_ENGINES: another copy of python-engines (e.g. a snapshot while the tree is being edited).
sys.path.insert(0, os.environ.get("ROLLFLOW_ENGINES", str(Path(__file__).resolve().parents[2] / "python-engines")))


@dataclasses.dataclass
class Config:
    env: str = "arithmetic"  # env name (rollflow_engines.envs)
    env_config: str = '{"max_operand": 9, "ops": ["+"]}'  # the env's Config as JSON
    model: str = "tiny:small+warm:add"  # tiny:<preset>[+warm:<name>] or a model directory
    warm_base: str | None = None  # with warm_override: a registered warm-start to vary (then --model names the preset)
    warm_override: str = "{}"  # JSON: WarmStart fields to change
    model_seed: int = 0  # seed of the tiny model's initial weights
    steps: int = 40  # train steps
    prompts: int = 16  # B: prompts (env seeds) per step
    group: int = 8  # G: samples per prompt (GRPO group)
    lr: float = 1e-3  # AdamW learning rate of the trainer
    max_new_tokens: int = 8  # per turn
    temperature: float = 1.0  # sampling temperature (the train step recomputes logprobs under it)
    pg_variant: str = "ppo"
    reward_norm: str = "group"  # applied once, before the estimator (grpo: its group normalisation)
    adv_estimator: str = "grpo"
    loss_agg_mode: str = "token_mean"
    ppo_epochs: int = 1
    entropy_coef: float = 0.0  # entropy bonus (entropy_loss_coef of the train step)
    micro_batch_size: int = 64
    grad_accum: int | None = None  # micro-batches per optimizer step; None: one optimizer step per epoch
    eval_episodes: int = 128  # held-out env seeds, one sample each at the training temperature
    eval_every: int = 10  # steps between evaluations (and always at the start and the end)
    seed: int = 0  # sampling seeds and env seeds derive from it
    torch_threads: int | None = None  # 1 is much faster than 2 when the cores are oversubscribed
    max_seconds: float | None = None  # stop early after this much wall time (model build excluded)
    results: str = "bench/learning/results.jsonl"  # where the summary is appended; "" for nowhere
    tag: str = ""  # free text stored with the summary


# ---- setup

def resolve_model(cfg: Config) -> str:
    """The model name or directory both backends load (a custom warm-start is built here, once)."""
    if cfg.warm_base is None:
        from rollflow_engines.models import resolve_model_path

        print(f"model directory: {resolve_model_path(cfg.model, cfg.model_seed, log=print)}")  # built before timing starts
        return cfg.model
    from rollflow_engines.models.tiny import default_cache_dir
    from rollflow_engines.models.names import split_name
    from rollflow_engines.models.warmstart import resolve_warm_path, warm_start

    spec = dataclasses.replace(warm_start(cfg.warm_base), **json.loads(cfg.warm_override))
    preset, _ = split_name(cfg.model)
    return str(resolve_warm_path(preset, spec, cfg.model_seed, default_cache_dir(), log=print))


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ---- rollouts

async def rollout(engine, env_cls, env_config, env_seed: int, sample_seed: int, cfg: Config):
    """One episode: (prompt ids, response ids, logprobs, loss mask, total reward, turns, invalid actions)."""
    from rollflow_engines.roles.inference.engine import SamplingParams

    env = env_cls()
    messages = [{"role": "user", "content": env.reset(env_seed, env_config)}]
    prompt = engine.chat_prompt(messages)
    response, logprobs, mask = [], [], []
    total, invalid, turn = 0.0, 0, 0
    context = engine.max_context or 10**9
    while True:
        full = prompt + response
        if len(full) + cfg.max_new_tokens > context:
            break  # out of context: the episode ends here, as a truncation
        params = SamplingParams(max_tokens=cfg.max_new_tokens, temperature=cfg.temperature, seed=sample_seed + turn)
        gen = (await engine.generate(full, params, 1))[0]
        response += gen.token_ids
        logprobs += gen.logprobs
        mask += [1] * len(gen.token_ids)
        text = engine.decode(gen.token_ids) or ""
        messages.append({"role": "assistant", "content": text})
        result = env.step(text)
        total += result.reward
        invalid += bool(result.info.get("invalid_action"))
        turn += 1
        if result.done:
            break
        new = [{"role": "user", "content": result.observation}]
        between = engine.chat_continuation(messages, new)
        messages += new
        response += between
        logprobs += [0.0] * len(between)
        mask += [0] * len(between)
    return prompt, response, logprobs, mask, total, turn, invalid


async def collect(engine, env_cls, env_config, env_seeds: list[int], per_seed: int, seed_base: int, cfg: Config):
    from rollflow_engines.roles.inference.engine import derive_seed

    jobs = [rollout(engine, env_cls, env_config, s, derive_seed(seed_base, s, k) % (1 << 62), cfg)
            for s in env_seeds for k in range(per_seed)]
    return await asyncio.gather(*jobs)


def summarise(episodes) -> dict[str, float]:
    n = len(episodes)
    turns = sum(e[5] for e in episodes)
    lengths = sorted(sum(e[3]) for e in episodes)  # generated tokens per episode
    return {"reward": sum(e[4] for e in episodes) / n, "invalid": sum(e[6] for e in episodes) / max(turns, 1),
            "gen_tokens": sum(lengths) / max(turns, 1), "turns": turns / n,
            "len_p50": lengths[n // 2], "len_p90": lengths[int(n * 0.9)], "len_max": lengths[-1]}


# ---- the loop

async def run(cfg: Config) -> dict:
    from rollflow_engines.envs import get_env
    from rollflow_engines.exports import write_export_manifest
    from rollflow_engines.roles.inference import Options as InferenceOptions, build_engine
    from rollflow_engines.roles.trainer import Options as TrainerOptions
    from rollflow_engines.roles.trainer.batch import prepare_batch
    from rollflow_engines.roles.trainer.batch_read import check_samples
    from rollflow_engines.roles.trainer.contracts import Sample, TrainStepRequest
    from rollflow_engines.roles.trainer.torch_backend import TorchTrainer

    if cfg.torch_threads:
        import torch

        torch.set_num_threads(cfg.torch_threads)  # before the warm-start build, too
    build_started = time.perf_counter()
    model = resolve_model(cfg)
    build_s = time.perf_counter() - build_started
    env_cls = get_env(cfg.env)
    env_config = env_cls.Config(**json.loads(cfg.env_config))
    exports = Path(tempfile.mkdtemp(prefix="recipe-exports-"))
    engine = build_engine("torch", InferenceOptions(backend="torch", model=model, model_seed=cfg.model_seed,
                                                    max_batch=cfg.prompts * cfg.group, max_n=cfg.group,
                                                    torch_threads=cfg.torch_threads, seed=cfg.seed))
    trainer = TorchTrainer(TrainerOptions(backend="torch", model=model, model_seed=cfg.model_seed, seed=cfg.seed,
                                          learning_rate=cfg.lr, micro_batch_size=cfg.micro_batch_size,
                                          gradient_accumulation_steps=cfg.grad_accum,
                                          torch_threads=cfg.torch_threads, export_dir=str(exports)))
    await engine.start()
    eval_seeds = [10**9 + i for i in range(cfg.eval_episodes)]  # disjoint from the training seeds

    async def evaluate(step: int) -> dict[str, float]:
        out = summarise(await collect(engine, env_cls, env_config, eval_seeds, 1, 777, cfg))
        print(f"eval  step {step:3d}  reward {out['reward']:.3f}  invalid {out['invalid']:.2f}  "
              f"tokens/turn {out['gen_tokens']:.1f}  turns {out['turns']:.1f}  "
              f"episode tokens p50/p90/max {out['len_p50']}/{out['len_p90']}/{out['len_max']}", flush=True)
        return {"step": step, **out}

    started = time.perf_counter()
    evals = [await evaluate(0)]
    history = []
    eval_s = time.perf_counter() - started
    for step in range(cfg.steps):
        t0 = time.perf_counter()
        seeds = [cfg.seed * 10**6 + step * cfg.prompts + i for i in range(cfg.prompts)]
        episodes = await collect(engine, env_cls, env_config, seeds, cfg.group, cfg.seed * 7919 + step, cfg)
        t1 = time.perf_counter()
        samples = [Sample(uid=f"{step}-{i}", group_id=f"{step}-{i // cfg.group}", prompt_ids=e[0], response_ids=e[1],
                          old_logprobs=e[2], loss_mask=e[3], reward=e[4]) for i, e in enumerate(episodes)]
        req = TrainStepRequest(step=step, pg_variant=cfg.pg_variant, adv_estimator=cfg.adv_estimator,
                               reward_norm=cfg.reward_norm, loss_agg_mode=cfg.loss_agg_mode,
                               ppo_epochs=cfg.ppo_epochs, temperature=cfg.temperature,
                               **({"entropy_loss_coef": cfg.entropy_coef} if cfg.entropy_coef else {}))
        check_samples(samples, "batch", trainer.vocab_size)
        metrics = (await trainer.train_step(req, prepare_batch(samples, req))).metrics
        t2 = time.perf_counter()
        target = exports / f"v{step + 1}"
        target.mkdir(parents=True)
        await trainer.export_weights(target)
        write_export_manifest(target, trainer.describe(), step + 1)  # as the trainer's /export_weights does
        await engine.pause("abort")
        await engine.update_weights(str(target), step + 1)
        await engine.resume()
        shutil.rmtree(exports / f"v{step}", ignore_errors=True)
        t3 = time.perf_counter()
        s = summarise(episodes)
        history.append({"step": step, **s, "gen_s": t1 - t0, "train_s": t2 - t1, "sync_s": t3 - t2,
                        "approxkl": metrics.get("actor/approxkl"), "clipfrac": metrics.get("actor/clipfrac")})
        elapsed = time.perf_counter() - started
        print(f"train step {step:3d}  reward {s['reward']:.3f}  invalid {s['invalid']:.2f}  tokens/turn {s['gen_tokens']:.1f}  "
              f"gen {t1 - t0:.1f}s train {t2 - t1:.1f}s sync {t3 - t2:.2f}s  kl {metrics.get('actor/approxkl', 0):.4f}  "
              f"wall {elapsed:.0f}s  load {load_average()}", flush=True)
        last = step + 1 == cfg.steps or (cfg.max_seconds is not None and elapsed > cfg.max_seconds)
        if last or (step + 1) % cfg.eval_every == 0:
            e0 = time.perf_counter()
            evals.append(await evaluate(step + 1))
            eval_s += time.perf_counter() - e0
        if last:
            break
    wall = time.perf_counter() - started
    await engine.stop()
    shutil.rmtree(exports, ignore_errors=True)
    tail = history[-5:]
    return {
        "config": dataclasses.asdict(cfg), "model_path": model, "build_s": round(build_s, 1),
        "steps_done": len(history), "wall_s": round(wall, 1), "train_loop_s": round(wall - eval_s, 1),
        "eval": evals, "initial_eval_reward": evals[0]["reward"], "final_eval_reward": evals[-1]["reward"],
        "first_train_reward": history[0]["reward"], "last5_train_reward": sum(h["reward"] for h in tail) / len(tail),
        "history": history, "load_end": load_average(), "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in dataclasses.fields(Config):
        name = "--" + f.name.replace("_", "-")
        kind = {"int": int, "float": float, "int | None": int, "float | None": float}.get(str(f.type), str)
        parser.add_argument(name, type=kind, default=f.default)
    cfg = Config(**vars(parser.parse_args()))
    print(f"load {load_average()} at start", flush=True)
    result = asyncio.run(run(cfg))
    summary = {k: v for k, v in result.items() if k not in ("history",)}
    print(json.dumps({k: summary[k] for k in ("initial_eval_reward", "final_eval_reward", "first_train_reward",
                                             "last5_train_reward", "steps_done", "wall_s", "train_loop_s", "build_s", "load_end")}))
    if cfg.results:
        with open(cfg.results, "a") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
