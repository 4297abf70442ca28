"""The one exception type for failures a user can cause."""


class NumasweepError(Exception):
    """A problem the user can fix: the message names the file, key or value and the fix.

    The command line prints it as one line without a traceback.
    """


class Unavailable(NumasweepError):
    """A benchmark's sweeps cannot run on this topology: a benchmark's `expand` raises it with the
    reason and the fix, and the plan leaves the benchmark out with that reason (the report's
    "Not run"), rather than refusing the whole campaign."""


class DiskFullError(NumasweepError):
    """A write that found its disk (or the user's quota) full: the message names the folder."""


# The errnos of a full disk or quota (ENOSPC, EDQUOT).
DISK_FULL_ERRNOS = (28, 122)


def disk_full(folder: object, what: str, instead: str = "") -> DiskFullError:
    """The one line for a full disk: where, what was not written (and what is kept), the fix
    (and `instead`, another one)."""
    return DiskFullError(f"disk full at {folder}: {what}; free space there (`df -h {folder}`) and run it again"
                         + (f", or {instead}" if instead else ""))
