"""The one exception type for failures a user can cause."""


class NumasweepError(Exception):
    """A problem the user can fix: the message names the file, key or value and the fix.

    The command line prints it as one line without a traceback.
    """
