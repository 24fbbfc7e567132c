"""Number helpers shared by bench/latency's report scripts (report.py, scaling_report.py)."""
import math
import statistics


def num(text):
    """The field as a float; NaN when it is not a number ("nan", "n/a", empty)."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def median(values):
    """The median of the values that are numbers; NaN when none is."""
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def fmt(value, digits=0):
    return "n/a" if math.isnan(value) else f"{value:,.{digits}f}"
