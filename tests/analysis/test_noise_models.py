"""Noise-only data under noise models the analysis was not tuned on (tests/analysis/noise_models.py):
at most 2 % of data sets with a claim about the machine, latency and bandwidth each, and every
outlier run it names really off the planted level by more than the floor."""

from __future__ import annotations

import pytest

from analysis import noise_models

PER_MODEL = 25


@pytest.mark.slow
def test_noise_only_data_of_every_noise_model_carry_no_claim_about_the_machine():
    figures = noise_models.measure(PER_MODEL, seed=97)
    for model, got in figures.items():
        machine = int(got["latency data sets with a claim about the machine"].split("/")[0])
        band = int(got["bandwidth data sets with a claim"].split("/")[0])
        assert machine + band <= 0.02 * 2 * PER_MODEL, (model, got)
        real, runs = map(int, got["outliers really off the planted level"].split("/"))
        assert real == runs, (model, got)
