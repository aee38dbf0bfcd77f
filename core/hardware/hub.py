"""Whether the Hugging Face hub can be reached, asked once and quickly, before anything downloads.

Without this, a hub id on a machine with no network (the usual GPU box behind a firewall) made
huggingface_hub retry five times with backoff — eleven warning lines over 26 s — before the clear
"not in the cache" line, and a hub dataset was reported only after 52 s of a run's start-up. A TCP
connect to the endpoint with a 2 s timeout answers the same question. When it fails, ``go_offline``
sets ``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` for this process, so transformers, datasets and
huggingface_hub use the local cache at once and fail at once when a file is not there.
"""
from __future__ import annotations

import functools
import os
import socket
from urllib.parse import urlsplit

TIMEOUT_S = 2.0
_TRUE = ("1", "true", "yes", "on")


def offline_by_setting() -> bool:
    return any(os.environ.get(k, "").lower() in _TRUE for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


@functools.lru_cache(maxsize=1)
def hub_reachable() -> bool:
    """A TCP connection to the hub's endpoint (``HF_ENDPOINT`` or huggingface.co) within TIMEOUT_S."""
    if offline_by_setting():
        return False
    parts = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "huggingface.co", port), timeout=TIMEOUT_S):
            return True
    except OSError:  # DNS failure, refused, unreachable, timed out
        return False


def go_offline() -> bool:
    """When the hub cannot be reached, make this process's libraries use the cache only; True if so."""
    if hub_reachable():
        return False
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    return True
