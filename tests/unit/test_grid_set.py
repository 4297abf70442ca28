"""`python -m numasweep grid --set KEY=VALUE`: a mistake in a --set value is blamed on the option,
not on the campaign file, in one line that names the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from numasweep.core.errors import NumasweepError
from numasweep.planning import grid

REPO = Path(__file__).resolve().parents[2]
DEFAULT = str(REPO / "config" / "config.yaml")


def grid_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "numasweep", "grid", "--config", DEFAULT, *args, "--count"],
                          capture_output=True, text=True, cwd=REPO)


def test_a_dotted_key_is_blamed_on_set_with_the_form_that_sets_it() -> None:
    """`--set repeat_until.max_repeats=0` (the issue's command): snakemake --config, which --set
    mirrors, sets top-level keys only; the line names the option and the nested form, which then
    plans."""
    proc = grid_cli("--set", "repeat_until.max_repeats=0")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    line = proc.stderr.strip()
    assert line.startswith("numasweep: error: --set repeat_until.max_repeats=0: "), line
    assert "config.yaml" not in line and "campaign" not in line and "Traceback" not in line
    assert "write --set 'repeat_until={max_repeats: 0}'" in line, line
    fixed = grid_cli("--set", "repeat_until={max_repeats: 0}")
    assert fixed.returncode == 0 and "Traceback" not in fixed.stderr, fixed.stderr
    assert grid.layered_config([DEFAULT], ["repeat_until={max_repeats: 0}"])["repeat_until"]["max_repeats"] == 0


@pytest.mark.parametrize("item, says", [
    ("repeat_until.nope=3", "--set repeat_until.nope=3: 'repeat_until' has no key 'nope'; known keys under it: "),
    ("latency.sweeps=[]", "write --set 'latency={sweeps: []}'"),
    ("no_such_key=1", "--set no_such_key=1: unknown config key 'no_such_key'; known keys: aggregate, arch,"),
    ("launcher", "--set launcher: write KEY=VALUE, e.g. --set launcher=srun"),
    ("batch=0", "--set batch=0: batch: 0 is less than the minimum of 1"),
    ("repeat_until={max_repeats: -1}", "--set repeat_until={max_repeats: -1}: repeat_until.max_repeats: -1 is less"),
])
def test_set_mistakes_name_the_option(item: str, says: str) -> None:
    with pytest.raises(NumasweepError) as err:
        grid.check_assignment_keys([item])
        config = grid.layered_config([DEFAULT], [item])
        grid.validate_with_assignments(config, [DEFAULT], [item])
    assert says in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert "config.yaml" not in str(err.value)


def test_a_campaign_file_mistake_is_still_the_file(tmp_path: Path) -> None:
    """Where the file itself is wrong, the file is named, --set given or not."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("batch: 0\n")
    config = grid.layered_config([bad], ["launcher=srun"])
    with pytest.raises(NumasweepError, match=r"^.*bad\.yaml: batch: 0 is less than the minimum of 1$"):
        grid.validate_with_assignments(config, [bad], ["launcher=srun"])
