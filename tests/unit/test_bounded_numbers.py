"""Every number a user can hand in has a range with an upper bound: each numeric key of the
config and arch schemas, and each numeric option of `python -m numasweep`. A value past it is one
line naming the key or option (the catalogue's cases), never a plan of a billion retries."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from numasweep.__main__ import COMMANDS, main
from numasweep.core.units import ranged

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "workflow" / "schemas"
# numbers that are no quantity: a reference's `where` holds identity values to match (a size, a
# rank), and a value that matches no point is its own line ("no measured point matches")
NOT_QUANTITIES = {"config.schema.yaml:/properties/references/items/properties/where/additionalProperties"}


def _unbounded(node, path: str = ""):
    if isinstance(node, dict):
        kinds = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
        if {"integer", "number"} & {k for k in kinds if isinstance(k, str)} and not {"maximum", "exclusiveMaximum"} & set(node):
            yield path
        for key, value in node.items():
            yield from _unbounded(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _unbounded(value, f"{path}[{i}]")


@pytest.mark.parametrize("schema", ["config.schema.yaml", "arch.schema.yaml"])
def test_every_numeric_schema_key_has_an_upper_bound(schema: str) -> None:
    found = [p for p in _unbounded(yaml.safe_load((SCHEMAS / schema).read_text()))
             if f"{schema}:{p}" not in NOT_QUANTITIES]
    assert not found, f"numeric keys of {schema} without a maximum:\n" + "\n".join(found)


def test_the_walk_finds_a_planted_unbounded_key() -> None:
    planted = {"properties": {"ok": {"type": "integer", "maximum": 3}, "n": {"type": ["number", "null"]}}}
    assert list(_unbounded(planted)) == ["/properties/n"]


def test_every_numeric_option_has_a_range(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """Each command's parser is built (its --help), and every option it adds with a numeric type
    takes `ranged`'s, whose bounds are finite."""
    seen: list[tuple[str, str, object]] = []
    add = argparse._ActionsContainer.add_argument

    def record(self, *args, **kwargs):
        seen.append((command, "/".join(a for a in args if isinstance(a, str)), kwargs.get("type")))
        return add(self, *args, **kwargs)

    monkeypatch.setattr(argparse._ActionsContainer, "add_argument", record)
    for command in COMMANDS:
        with pytest.raises(SystemExit):
            main([command, "--help"])
    capsys.readouterr()
    assert len({c for c, _, _ in seen}) == len(COMMANDS), "a command added no option"
    loose = [f"{c} {opt}: {t.__name__}" for c, opt, t in seen if t in (int, float)]
    assert not loose, "numeric options without a range (core.units.ranged):\n" + "\n".join(loose)
    bounds = [t.bounds for _, _, t in seen if hasattr(t, "bounds")]
    assert len(bounds) >= 8 and all(float("-inf") < lo <= hi < float("inf") for lo, hi in bounds), bounds


@pytest.mark.parametrize("argv, says", [
    (["compare", "--results", str(REPO / "examples" / "lumi-g"), "--tolerance", "1e9"],
     "argument --tolerance: 1e9 is outside 0 to 10"),
    (["fleet", "--results", str(REPO / "examples" / "lumi-g"), "--tolerance", "0"],
     "argument --tolerance: 0 is outside 1e-06 to 10"),
    (["plan", "--arch", str(REPO / "config" / "arch" / "lumi-g.yaml"), "--sequential", "0",
      "--ranks-per-domain", "100000"], "argument --ranks-per-domain: 100000 is outside 1 to 8192"),
])
def test_an_option_past_its_range_is_refused_before_anything_runs(argv, says, capsys) -> None:
    """argparse's usage, then one line naming the option and its range."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.strip().splitlines()[-1].endswith(says), err


@pytest.mark.parametrize("text", ["nan", "-1", "1e30", "ten"])
def test_a_ranged_option_refuses_what_lies_outside(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        ranged(float, 0, 10)(text)
