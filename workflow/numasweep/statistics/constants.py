"""The model's constants, in a module of the standard library alone: `stats` (on numpy and
scipy) and `repeat` (the job runner's, which imports neither) read them from here."""

import math

LEVEL = 0.95            # confidence level of every interval
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)   # SE(median) / SE(mean) of normal draws
SHAMOS = 1.0483         # sigma = SHAMOS x median |x_i - x_j| for normal draws
