"""What the engines' torch devices report from the outside: the process's peak CUDA memory, for /metrics.

Read lazily from whatever torch this process already imported: a sim server never imports torch for it."""
from __future__ import annotations

import sys


def cuda_peak_bytes() -> float:
    """torch.cuda.max_memory_allocated() summed over this process's CUDA devices; 0 where CUDA was never used."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return 0.0
    return float(sum(torch.cuda.max_memory_allocated(i) for i in range(torch.cuda.device_count())))
