"""One number format for the command line and the dashboard (``static/util.js`` ``fmtNum`` follows it).

The rules, written once here and in docs/ui.md:

- booleans are ``yes`` / ``no``; NaN is ``NaN``; infinities ``inf`` / ``-inf``;
- integers (and floats with an integral value, below 1e15) are whole, in groups
  of three with a thin space from 10 000: ``22 528``;
- other numbers keep ``digits`` (4) significant digits, trailing zeros dropped:
  ``0.002945``, ``0.135``, ``123.5``; from ``10**digits`` they are rounded to
  whole numbers (``22 528``);
- below 0.001 and from 1e9 they are written with an exponent, no ``+`` and no
  leading zero in it: ``2.467e-9``, ``3e-4``, ``1.5e9``.

:func:`aligned` then pads a column's texts on the right so that their decimal
points line up under a right-aligned header (trailing zeros are not added back:
``0.135`` and ``0.005151`` keep their digits and their points line up).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

#: Thin space: the separator of thousands groups (``22 528``), as the page writes them.
THIN = "\u2009"
#: A fixed-point number as :func:`number` writes it (not an exponent, not NaN or inf).
_FIXED = re.compile(r"^-?[0-9\u2009]+(\.[0-9]+)?$")


def _grouped(n: int) -> str:
    text = f"{abs(n):,}".replace(",", THIN)
    return f"-{text}" if n < 0 else text


def _significant(v: float, digits: int) -> Decimal:
    """``v`` rounded to ``digits`` significant digits, exact ties away from zero (as JavaScript's
    ``toPrecision`` and ``toExponential`` round), from the exact binary value."""
    d = Decimal(v)
    if d == 0:
        return d
    shift = d.adjusted() - digits + 1
    return d.quantize(Decimal(1).scaleb(shift), rounding=ROUND_HALF_UP)


def _exponent(v: float, digits: int) -> str:
    r = _significant(v, digits)
    exp = r.adjusted()
    mant = format(r.scaleb(-exp), "f")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{exp}"


def number(value: Any, digits: int = 4) -> str:
    """A number as text, by the rules of this module (``-`` for None; other values as ``str``).

    :param value: an int, float, bool, numpy scalar or None.
    :param digits: significant digits of a number that is not whole.
    """
    if value is None:
        return "-"
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return _grouped(value) if abs(value) >= 10_000 else str(value)
    if not isinstance(value, float):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    a = abs(value)
    if value == int(value) and a < 1e15:
        return number(int(value))
    if a < 1e-3 or a >= 1e9:
        return _exponent(value, digits)
    if a >= 10 ** digits:  # whole, exact halves away from zero (as the page rounds them)
        return number(int(Decimal(value).quantize(Decimal(1), rounding=ROUND_HALF_UP)))
    rounded = float(_significant(value, digits))
    if rounded == int(rounded):  # 9999.7 to 4 digits is 10 000
        return number(int(rounded))
    return repr(rounded)  # the shortest text of that float, fixed-point in [1e-3, 1e15)


def aligned(texts: Sequence[str], pad: str = " ") -> list[str]:
    """A column's texts padded on the right so that the decimal points of its fixed-point numbers line up.

    Texts that are not fixed-point numbers (exponents, words) are left as they are.

    :param pad: the padding character (the page uses a figure space, as wide as a digit).
    """
    decimals = [len(t) - t.index(".") - 1 if "." in t else 0 for t in texts]
    fixed = [bool(_FIXED.match(t)) for t in texts]
    widest = max((d for d, f in zip(decimals, fixed, strict=True) if f), default=0)
    if widest == 0:
        return list(texts)
    out = []
    for t, d, f in zip(texts, decimals, fixed, strict=True):
        if not f:
            out.append(t)
        elif d == 0:
            out.append(t + pad * (widest + 1))
        else:
            out.append(t + pad * (widest - d))
    return out
