"""Full jitter over a capped exponential: the one backoff rule of every retry in syncer.

A retry that waits exactly ``base * 2**n`` brings everyone who failed together back together:
the replicas that lost the same API server, the fleet of installations whose pushes lost to the
same push. Waiting a uniformly random time between 0 and that bound ("full jitter") spreads them
over the whole window, and the window doubling per failure in a row adapts it to how many are
contending, up to ``cap``.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["full_jitter"]

#: 2.0 ** 1024 overflows a float; an exponent past this already exceeds any cap.
_MAX_EXPONENT = 64


def full_jitter(failures: int, base: float, cap: float, rand: Callable[[], float]) -> float:
    """Seconds to wait after ``failures`` failures in a row (1, 2, ...): ``rand()`` (uniform in
    [0, 1)) times ``base * 2**(failures - 1)``, at most ``cap``."""
    return float(rand()) * min(cap, base * 2.0 ** min(max(0, failures - 1), _MAX_EXPONENT))
