"""Reading and writing result files so that a bad file names itself and a crash loses nothing."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TextIO

from numasweep.core.errors import DISK_FULL_ERRNOS, DiskFullError, NumasweepError, disk_full
from numasweep.core.units import size_words

if TYPE_CHECKING:
    import pandas as pd


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write to a temporary file in the same folder, then rename: never a half-written file.

    The folder must exist (a mistyped -o is refused rather than creating folders), and a
    folder given as the file or a place that cannot be written is one NumasweepError; a full
    disk is one line naming the folder and the space the file needs."""
    data = text.encode()
    atomic_write(path, lambda fh: fh.write(data), binary=True, size=len(data))


def space_needed(folder: str | os.PathLike, sizes: list[int]) -> str:
    """`they need 1.2 MiB, 40 KiB are free there`: files of `sizes` bytes in `folder`, each
    rounded up to whole blocks of its file system."""
    place = Path(folder).absolute()
    while not place.exists() and place != place.parent:
        place = place.parent
    fs = os.statvfs(place)
    need = sum(-(-size // fs.f_frsize) * fs.f_frsize for size in sizes)
    return f"{'it needs' if len(sizes) == 1 else 'they need'} {size_words(need)}, " \
           f"{size_words(fs.f_bavail * fs.f_frsize)} are free there"


def atomic_write(path: str | os.PathLike, write: Callable[[TextIO], object], binary: bool = False,
                 size: int | None = None) -> None:
    """`atomic_write_text` for a writer given the open file (`binary`: opened for bytes): a large
    table goes to the file as it is formatted instead of first into one string. `size`: the
    bytes it writes, where known, for the full disk's line."""
    path = Path(path)
    if path.is_dir():
        raise NumasweepError(f"{path}: is a folder; give a file name to write (e.g. {path}/{path.name or 'out'}.csv)")
    if not path.parent.is_dir():
        raise NumasweepError(f"{path}: no folder '{path.parent}'; create it (mkdir -p {path.parent}) or give another path")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        if exc.errno in DISK_FULL_ERRNOS:
            raise disk_full(path.parent, f"{path} was not written") from None
        raise NumasweepError(f"{path}: cannot write there ({exc.strerror}); give a path in a folder you can write") from None
    # mkstemp makes the file private (0600); results are shared like any file the user writes.
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "wb" if binary else "w") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:
            need = "" if size is None else f"; {space_needed(path.parent, [size])}"
            raise disk_full(path.parent, f"{path} was not written (a file it would replace is kept){need}") from None
        raise


def atomic_write_files(folder: Path, files: dict[Path, bytes], what: str) -> None:
    """Write several files in `folder` (`what` they are, in words), each as `atomic_write` does,
    all or none: a failure removes those this call wrote, and a full disk is one line naming the
    folder and the space they all need."""
    written: list[Path] = []
    try:
        for path, data in files.items():
            made = [p for p in [path.parent, *path.parent.parents] if not p.exists()]
            written += reversed(made)  # outermost first: removed last
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                if exc.errno in DISK_FULL_ERRNOS:
                    raise disk_full(folder, "") from None
                raise NumasweepError(f"{path.parent}: cannot make the folder ({exc.strerror}); give a folder "
                                     "you can write") from None
            atomic_write(path, lambda fh, data=data: fh.write(data), binary=True)
            written.append(path)
    except DiskFullError:
        _unwrite(written)
        raise disk_full(folder, f"{what} were not written; {space_needed(folder, [len(d) for d in files.values()])}") \
            from None
    except BaseException:
        _unwrite(written)
        raise


def _unwrite(paths: list[Path]) -> None:
    """Remove the files and (empty) folders written, the latest first."""
    for path in reversed(paths):
        try:
            path.rmdir() if path.is_dir() else path.unlink(missing_ok=True)
        except OSError:
            pass


def check_writable(folder: str | os.PathLike, what: str) -> None:
    """A folder a run will write in (or, not made yet, the folder it goes in) must be writable:
    a read-only file system, a folder the user may not write, a file where the folder would be
    and a symbolic link that resolves to nothing (a loop, or a target gone) are one NumasweepError."""
    path = Path(folder)
    if path.is_symlink() and not path.exists():
        raise NumasweepError(f"{folder}: {what} is a symbolic link to {os.readlink(path)}, which leads nowhere (a loop "
                             f"or a target gone); remove the link (rm {folder}) or point it at a folder")
    if path.exists() and not path.is_dir():
        raise NumasweepError(f"{folder}: {what} is a file, not a folder; move it away (mv {folder} {folder}.old) "
                             "or give another folder")
    place = path.absolute()
    while not place.exists() and place != place.parent:
        place = place.parent
    if os.access(place, os.W_OK):
        return
    if os.statvfs(place).f_flag & os.ST_RDONLY:
        raise NumasweepError(f"{folder}: {what} is on a read-only file system ({place}); remount it read-write "
                             "or run from a writable copy of the checkout")
    raise NumasweepError(f"{folder}: {what} cannot be written ({place} is not writable for this user); "
                         f"fix its permissions (chmod u+w {place}) or run from a writable copy of the checkout")


# Values that aliases (`*name`) may add to a YAML file: a few shared settings reused a few times
# fit easily; nested aliases (an "anchor bomb") that expand to millions of values are refused
# before anything expands them.
ALIAS_VALUES = 10_000
_MERGE_TAG = "tag:yaml.org,2002:merge"


def load_yaml(path: str | os.PathLike, what: str = "file") -> object:
    """A YAML file's content, read by the one loader of the project's configs, arch files and
    schemas: a syntax error, a key given twice in one mapping (YAML would keep the last silently)
    and aliases that would expand past ALIAS_VALUES values are each one NumasweepError naming
    the file and line."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise NumasweepError(f"{path}: cannot read the {what} ({getattr(exc, 'strerror', None) or exc}); "
                             "give a readable YAML file") from None
    loader = None
    try:
        # libyaml's parser where PyYAML has it (its wheels do): ten times faster on the schema
        # that every snakemake start and every job reads, with the same nodes, lines and columns.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml_node(node, path, what)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        if not isinstance(loader, yaml.SafeLoader):
            exc = _pure_yaml_error(text) or exc
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).strip().splitlines()[0]
        context = getattr(exc, "context", None)
        said = f"{context}, {problem}" if context else problem
        raise NumasweepError(f"{where}: YAML syntax error in the {what} ({said}); correct that line") from None
    except RecursionError:
        raise NumasweepError(f"{path}: the {what} nests lists or mappings too deep to read (hundreds of "
                             "levels); flatten it") from None
    finally:
        if loader is not None:
            loader.dispose()


def _pure_yaml_error(text: str) -> Exception | None:
    """The pure-Python parser's error for a text libyaml refused: its words name the character
    at fault (libyaml's say "found character that cannot start any token")."""
    import yaml

    try:
        loader = yaml.SafeLoader(text)  # its reader refuses a control character here
    except yaml.YAMLError as exc:
        return exc
    try:
        loader.construct_document(loader.get_single_node())
    except yaml.YAMLError as exc:
        return exc
    finally:
        loader.dispose()
    return None


def _check_yaml_node(root: object, path: Path, what: str) -> None:
    """Refuse a key given twice in one mapping and aliases expanding past ALIAS_VALUES values.

    An alias is the node of its anchor met again: each node is walked once, and each later
    meeting adds the node's expanded size, so the walk stays as small as the file."""
    from yaml.nodes import MappingNode, ScalarNode, SequenceNode

    sizes: dict[int, int] = {}
    added = 0

    def size(node: object, key: object) -> int:
        nonlocal added
        if id(node) in sizes:
            if sizes[id(node)] < 0:
                raise NumasweepError(f"{path}:{node.start_mark.line + 1}: in the {what}, '{key.value}' holds an "
                                     "alias to itself, which never ends; write the values out")
            added += sizes[id(node)]
            if added > ALIAS_VALUES:
                raise NumasweepError(f"{path}:{key.start_mark.line + 1}: in the {what}, aliases (*name) under "
                                     f"'{key.value}' expand to more than {ALIAS_VALUES} values; write the values "
                                     "out, or reuse fewer anchors")
            return sizes[id(node)]
        sizes[id(node)] = -1
        total = 1
        if isinstance(node, SequenceNode):
            total += sum(size(item, key) for item in node.value)
        elif isinstance(node, MappingNode):
            lines: dict[tuple[str, str], int] = {}
            for name, value in node.value:
                if isinstance(name, ScalarNode) and name.tag != _MERGE_TAG:
                    line = name.start_mark.line + 1
                    if (name.tag, name.value) in lines:
                        raise NumasweepError(
                            f"{path}:{line}: in the {what}, key '{name.value}' is given twice in one mapping (lines "
                            f"{lines[name.tag, name.value]} and {line}), and YAML would keep only the last; "
                            "merge them into one")
                    lines[name.tag, name.value] = line
                total += size(name, name) + size(value, name if isinstance(name, ScalarNode) else key)
        sizes[id(node)] = total
        return total

    size(root, ScalarNode("tag:yaml.org,2002:str", "(top)", root.start_mark, root.end_mark))


def pattern_problem(error: object) -> str | None:
    """A schema `pattern` error in words, from the schema's `allowed` note (jsonschema ignores the
    key): "'a b' has characters outside lower-case letters, ...; use only those"; and a name over
    its `maxLength`. None for other errors."""
    if getattr(error, "validator", None) == "maxLength":
        # A name that goes into folder, file and job-id names: every one must stay under the file
        # system's 255-byte limit.
        return (f"{str(getattr(error, 'instance', ''))[:20]!r}... has {len(str(getattr(error, 'instance', '')))} "
                f"characters: use at most {error.validator_value} (it is part of file and folder names)")
    allowed = getattr(error, "schema", {}).get("allowed")
    if getattr(error, "validator", None) != "pattern" or not allowed:
        return None
    return f"{getattr(error, 'instance', '')!r} is not allowed: use only {allowed.strip()}"


# Columns of an aggregated table that analyse, figures and report never read: when and on which
# build each job ran (its provenance record keeps them, and `store` reads those) and the kernel's
# load count. A million rows load in about half the time and memory without them.
UNREAD = ("start", "end", "slurm_job_id", "kernel_commit", "topology_digest", "loads")
# Columns only the report reads (the launch lines, the hosts and run columns of its data-quality
# part): analyse and figures leave these unread too.
REPORT_ONLY = ("command", "prov_host", "sample_s", "spread_pct", "first_touch_s", "cycle_build_s", "on_cpu_pct",
               "retaken", "timer_ticks", "variant", "shape_choice")


# Rows read to tell a table's text columns: pandas reads a column as text when one of its values
# is not a number, and a text column read as categories holds the same strings in a fraction of
# the memory (a million rows of a few hundred identities: 126 MiB against 780, and the reader's
# peak 318 MiB against 450).
_SNIFF_ROWS = 1000


def _text_columns(path: Path, usecols: Callable[[str], bool] | None) -> list[str]:
    """The columns of `path` (of those `usecols` keeps) that pandas reads as text in its first
    rows: text there is text in the whole column. A column of numbers or empty there is left to
    the reader (one text value further down makes it text, as without `codes`)."""
    import pandas as pd

    head = pd.read_csv(path, usecols=usecols, nrows=_SNIFF_ROWS)
    return [c for c in head.columns if pd.api.types.is_string_dtype(head[c]) or head[c].dtype == object]


def _first_line(exc: BaseException) -> str:
    """An exception's message in one line, or its type where it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass(frozen=True)
class Limit:
    """The most one result file may hold (docs/INTERFACES.md, "Limits"): checked before it is read
    (its bytes) and as it streams (its rows), so a huge or hostile file is refused in seconds with
    the memory of one chunk."""
    what: str
    rows: int
    size: int  # bytes


# A job's CSV: a kernel's rows of one grid point (a latency job of 256 ranks, 40 sizes and 50
# repetitions writes 512,000); a benchmark's aggregated table: every job of a campaign (a fleet
# of a thousand nodes of such jobs is past it: aggregate it per partition).
JOB_FILE = Limit("a job's CSV", rows=2_000_000, size=256 << 20)
TABLE_FILE = Limit("an aggregated table", rows=50_000_000, size=8 << 30)
CHUNK_ROWS = 250_000  # rows read and checked at a time


def read_csv(path: str | os.PathLike, required: list[str] | tuple[str, ...] = (),
             skip: tuple[str, ...] = (), codes: bool = False, keep: tuple[str, ...] = (),
             limit: Limit = JOB_FILE, check: Callable[[pd.DataFrame, int], None] | None = None) -> pd.DataFrame:
    """A result CSV with the columns it must have, or a one-line error naming the file and the fix.
    Columns in `skip` are not read, unless required or in `keep` (a benchmark's checked columns).
    `codes`: the text columns as categoricals, each distinct text held once (`_text_columns`),
    their categories in text order, so a grouping sorts as the text does. The file is read
    CHUNK_ROWS rows at a time, within `limit`: the header's columns are checked first, then
    `check(chunk, first_row)` on each chunk as it comes (a bad cell refused before the rest is
    read)."""
    # pandas is imported here, not at the top: the per-job provenance step imports this module
    # and only writes text, and pandas costs seconds to import on a slow or emulated machine.
    import pandas as pd
    from pandas.api.types import union_categoricals

    path = Path(path)
    if not path.exists():
        raise NumasweepError(f"{path}: no such result file; rerun the job that writes it")
    if path.is_dir():
        raise NumasweepError(f"{path}: is a folder, not a result file; give the files in it ({path}/*.csv)")
    size = path.stat().st_size
    if size > limit.size:
        raise NumasweepError(f"{path}: {size_words(size)}, more than {limit.what} may hold ({size_words(limit.size)}, "
                             "docs/INTERFACES.md); it is no result of this workflow: delete it and rerun its job")
    unread = set(skip) - set(required) - set(keep)
    chunks, rows = [], 0
    try:
        usecols = (lambda c: c not in unread) if unread else None
        dtype = {c: "category" for c in _text_columns(path, usecols)} if codes else None
        with pd.read_csv(path, usecols=usecols, dtype=dtype, chunksize=CHUNK_ROWS) as reader:
            for chunk in reader:
                if not chunks:
                    _check_columns(path, chunk, required)
                if check:
                    check(chunk.reset_index(drop=True), rows)
                rows += len(chunk)
                if rows > limit.rows:
                    raise NumasweepError(f"{path}: more than {limit.rows:,} rows, more than {limit.what} may hold "
                                         "(docs/INTERFACES.md); it is no result of this workflow: delete it and "
                                         "rerun its job")
                chunks.append(chunk)
        if not chunks:   # a header and no rows
            chunks = [pd.read_csv(path, usecols=usecols, dtype=dtype)]
            _check_columns(path, chunks[0], required)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise NumasweepError(
            f"{path}: corrupt CSV ({_first_line(exc)}); delete it and rerun its job"
        ) from None
    if len(chunks) == 1:
        return chunks[0]
    text = [c for c in chunks[0].columns if isinstance(chunks[0][c].dtype, pd.CategoricalDtype)]
    df = pd.concat([chunk.drop(columns=text) for chunk in chunks], ignore_index=True)
    for c in text:   # each chunk has the categories it met: their union, in text order
        df[c] = union_categoricals([chunk[c] for chunk in chunks], sort_categories=True)
    return df[list(chunks[0].columns)]


def _check_columns(path: Path, df: pd.DataFrame, required: list[str] | tuple[str, ...]) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise NumasweepError(
            f"{path}: missing column(s) {', '.join(missing)}; delete it and rerun its job"
        )
