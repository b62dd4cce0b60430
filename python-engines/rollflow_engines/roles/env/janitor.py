"""The env server's janitor: reaps orphaned workspaces at start, periodically, and at shutdown, and old snapshots.

The first sweep runs before the server answers (workspaces a crashed predecessor left behind); then a
daemon thread sweeps every ``interval_s``; ``stop`` sweeps once more with no owner live, so every
workspace this server still holds is removed with its processes. Snapshots go by age alone, even at
shutdown: another server may still resume their episodes; then the blobs no remaining snapshot names
(snapshots.reap_blobs), also past that age.
"""
from __future__ import annotations

import logging
import threading

from ...envs import snapshots
from ...errors import UnavailableError
from ...objects import ObjectStoreError
from ...sandbox import SandboxSettings, reap_orphans

log = logging.getLogger(__name__)
MAX_INTERVAL_S = 60.0


def sweep_interval(max_age_s: float) -> float:
    """Often enough that nothing outlives max_age_s by much more than a quarter of it; at most a minute."""
    return min(MAX_INTERVAL_S, max(0.5, max_age_s / 4))


class Janitor:
    def __init__(self, settings: SandboxSettings, snapshot_max_age_s: float, on_reaped=lambda n: None, on_snapshots_reaped=lambda n: None):
        self.settings, self._on_reaped = settings, on_reaped
        self.snapshot_max_age_s, self._on_snapshots_reaped = snapshot_max_age_s, on_snapshots_reaped
        self._stop = threading.Event()
        self.sweep(live_owners={settings.owner})
        self._thread = threading.Thread(target=self._loop, name="rollflow-sandbox-janitor", daemon=True)
        self._thread.start()

    def sweep(self, live_owners: set[str]) -> int:
        try:
            self._on_snapshots_reaped(snapshots.reap(self.snapshot_max_age_s))
            snapshots.reap_blobs(self.snapshot_max_age_s)  # after reap: blobs only the reaped snapshots named go too
        except (OSError, ObjectStoreError, UnavailableError) as e:  # the next sweep tries again
            log.warning("janitor: cannot sweep snapshots: %s", e)
        try:
            removed = reap_orphans(self.settings.root, max_age_s=self.settings.max_age_s, live_owners=live_owners)
        except OSError as e:  # an unreadable root must not stop the server; the next sweep tries again
            log.warning("sandbox janitor: cannot sweep %s: %s", self.settings.root, e)
            return 0
        self._on_reaped(removed)
        return removed

    def _loop(self) -> None:
        while not self._stop.wait(sweep_interval(min(self.settings.max_age_s, self.snapshot_max_age_s))):
            self.sweep(live_owners={self.settings.owner})

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sweep(live_owners=set())
