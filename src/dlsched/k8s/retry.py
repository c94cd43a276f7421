"""Retries with exponential back-off for API calls that fail for a while (5xx, 429, network)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRIED_CODES = frozenset({429, 500, 502, 503, 504})
"""HTTP codes worth retrying: the server is overloaded or briefly unavailable."""


def transient(exc: BaseException) -> bool:
    """True for failures that may go away by themselves: 5xx, 429, a dropped connection."""
    if isinstance(exc, ApiException):
        return exc.status in RETRIED_CODES
    return isinstance(exc, HTTPError | ConnectionError | TimeoutError)


def with_retries(
    call: Callable[[], T],
    what: str,
    *,
    attempts: int = 5,
    base_s: float = 0.05,
    max_s: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``call()``, tried up to ``attempts`` times while it fails transiently, waiting
    ``base_s * 2**k`` seconds (at most ``max_s``) between tries; other failures and the last
    transient one are raised."""
    for attempt in range(attempts - 1):
        try:
            return call()
        except Exception as exc:
            if not transient(exc):
                raise
            delay = min(max_s, base_s * 2**attempt)
            log.warning("%s failed (%s); retry %d in %.2f s", what, short(exc), attempt + 1, delay)
            sleep(delay)
    return call()


def short(exc: BaseException) -> str:
    """``exc`` in one line: an API error as its code and reason."""
    if isinstance(exc, ApiException):
        text = f"{exc.status} {exc.reason}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())
