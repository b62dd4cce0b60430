from .tiny import TINY_PRESETS, build_tiny_model, load_model, resolve_model_path

__all__ = ["TINY_PRESETS", "build_tiny_model", "load_model", "resolve_model_path"]
