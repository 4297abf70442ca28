"""numasweep: NUMA memory benchmark campaigns, from sweep to report."""

from numasweep.core.errors import NumasweepError

__all__ = ["NumasweepError"]
