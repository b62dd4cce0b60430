"""rollflow's Python engine servers: the GPU-side work the TypeScript workflows orchestrate."""

__version__ = "0.1.0"
