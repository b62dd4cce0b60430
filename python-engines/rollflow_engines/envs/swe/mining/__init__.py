"""The task miner: SWE-bench-format tasks mined from pinned PyPI projects by program mutations, kept by real test
runs and validated by the swe env's grader (docs/swe-mining.md; ``python -m rollflow_engines.envs.swe.mining``)."""
