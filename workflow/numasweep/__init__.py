"""numasweep: NUMA memory benchmark campaigns, from sweep to report."""

from numasweep.core.errors import NumasweepError
from numasweep.core.version import __version__

__all__ = ["NumasweepError", "__version__"]
