from .loading import load_model, resolve_model_path
from .tiny import TINY_PRESETS, build_tiny_model

__all__ = ["TINY_PRESETS", "build_tiny_model", "load_model", "resolve_model_path"]
