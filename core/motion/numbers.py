"""Numbers as text for whole arrays, exactly as Python's repr() writes each one, 4x faster.

Text playback files hold millions of numbers (a minute at 500 Hz of a 29-joint robot
in ros2-yaml is 2.6 M); repr() per value costs ~0.45 us each. Here the shortest
round-tripping digits are found with numpy (exact split products of the value and a
power of ten); the rare values needing an exponent, near-ties and powers of two go
through repr() itself, so the text is byte-identical to repr()'s.
"""
from __future__ import annotations

import re

import numpy as np


def number_rows(data: np.ndarray, sep: str, yaml: bool = False) -> list[bytes]:
    """Shortest round-trip text of every value (exactly repr()), one line per row."""
    return number_text(data, sep, yaml).split(b"\n")[:-1]


# --------------------------------------------------------- number text ---
#
# Files hold every number as repr() writes it: the shortest text that reads
# back as the same double. repr() costs about half a microsecond a value and
# a minute at 500 Hz holds one to three million numbers, so the same text is
# built for whole arrays at once: exactly for 1e-4 <= |x| < 1e16 (where repr()
# writes no exponent), by repr() itself for the rest and for near-ties. Each
# value gets a 32-byte slot (what precedes it and its sign, then up to 24
# bytes of text, NUL where nothing); deleting the NULs leaves the text. The
# slots are built as little-endian words, as on every platform Blender runs.

_YAML_BARE_EXP = re.compile(r"(?<![\d.])(\d+)e")  # "1e-05" is a string to YAML 1.1 readers: "1.0e-05"
_TIE = 1e-9            # a rounding decision this close to a tie is left to repr()
_CHUNK = 16384         # values per pass: keeps the temporaries in cache
_SPLIT = 134217729.0   # 2**27 + 1: Dekker's split of a double into two 26-bit halves
_TEN = 10.0 ** np.arange(1, 21)  # 10**1 .. 10**20, exact in binary
_TEN_HI = _TEN * _SPLIT - (_TEN * _SPLIT - _TEN)
_TEN_LO = _TEN - _TEN_HI
_FOUR_DIGITS = np.frombuffer("".join(f"{k:04d}" for k in range(10000)).encode(), np.uint32).astype(np.uint64)
_POINTS = range(-3, 17)  # decimal point positions repr() writes without an exponent


def _text_words(texts: list[bytes]) -> np.ndarray:
    """(3, len(texts)): each 24-byte text (NUL-padded) as three little-endian words."""
    return np.frombuffer(b"".join(t.ljust(24, b"\0") for t in texts), np.uint64).reshape(-1, 3).T.copy()


_SHOWN = _text_words([b"\xff" * n for n in range(18)])  # masks: the first n digits
_HEAD = _text_words([b"\xff" * max(p, 0) for p in _POINTS])  # masks: the digits before the point
_MARK = _text_words([b"\0" * p + b"." if p > 0 else b"0." + b"0" * -p for p in _POINTS])  # "." or "0.00"
_MOVE = np.array([8 * max(2 - p, 1) for p in _POINTS], np.uint64)  # bits the digits after it move up


def number_text(values: np.ndarray, sep: str, yaml: bool = False) -> bytes:
    """repr() of every value of the 2-D `values`: `sep` between a row's values, a line a row.
    yaml: "1e-05" becomes "1.0e-05" (YAML 1.1 reads a bare-mantissa exponent as a string)."""
    values = np.asarray(values, dtype=np.float64)
    rows, cols = values.shape
    if cols == 0:
        return b"\n" * rows
    flat = np.ascontiguousarray(values).reshape(-1)
    sep_word, end_word = (np.frombuffer(s.encode().ljust(8, b"\0"), np.uint64)[0] for s in (sep, "\n"))
    before = np.where(np.arange(_CHUNK + cols) % cols == 0, end_word, sep_word)  # what precedes a value
    parts = []
    for start in range(0, flat.size, _CHUNK):
        x = flat[start:start + _CHUNK]
        lead = before[start % cols:start % cols + x.size].copy()
        lead[:1] = 0 if start == 0 else lead[:1]
        parts.append(_slots(x, lead, yaml).tobytes().translate(None, b"\0"))
    parts.append(b"\n" if rows else b"")
    return b"".join(parts)


def _slots(x: np.ndarray, before: np.ndarray, yaml: bool) -> np.ndarray:
    """(len(x), 4) words: `before` and the sign, then the text: the digits, with the bytes after
    the point (or all, past "0.00") shifted up to make room for it."""
    a = np.abs(x)
    zero = a == 0
    fast = (a >= 1e-4) & (a < 1e16)
    digits, shown, point, sure = _repr_digits(np.where(fast, a, 3.0))  # zeros: "3.0" -> "0.0" below
    out = np.zeros((x.size, 4), np.uint64)
    out[:, 0] = before | np.signbit(x) * np.uint64(ord("-") << 56)
    high, low = (part.astype(np.float64) for part in np.divmod(digits, 10 ** 8))
    top = np.floor(high * 1e-8)  # exact, as below: the parts are under 1e9 and 1e8
    high -= top * 1e8
    half = [_FOUR_DIGITS[np.floor(p * 1e-4).astype(np.int64)]
            | _FOUR_DIGITS[(p - np.floor(p * 1e-4) * 1e4).astype(np.int64)] << np.uint64(32) for p in (high, low)]
    byte, last = np.uint64(8), np.uint64(56)
    words = ((top - 3 * zero + ord("0")).astype(np.uint64) | half[0] << byte, half[0] >> last | half[1] << byte,
             half[1] >> last)
    shown = np.maximum(shown, point + 1)  # 1e15 -> "1000000000000000.0"
    at = point - _POINTS[0]
    move = _MOVE[at]
    carry = np.zeros(x.size, np.uint64)
    for j, word in enumerate(words):
        head = _HEAD[j][at]
        tail = word & _SHOWN[j][shown] & ~head
        out[:, 1 + j] = word & head | tail << move | carry | _MARK[j][at]
        carry = tail >> (np.uint64(64) - move)
    for i in np.flatnonzero(~(sure & fast | zero)):
        text = repr(float(x[i]))
        text = _YAML_BARE_EXP.sub(r"\1.0e", text) if yaml else text
        slot = out[i].view(np.uint8)
        slot[7:] = 0
        slot[8:8 + len(text)] = np.frombuffer(text.encode(), np.uint8)
    return out


def _repr_digits(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For 1e-4 <= a < 1e16: repr()'s digits (17, padded with zeros), how many it shows, where
    its decimal point goes, and whether that is sure.

    y = a * 10**s in [1e16, 1e17) is exact as a pair of doubles (Dekker's product), so the
    15-, 16- and 17-digit roundings of a are exact too; repr() shows the shortest one that
    reads back as a (within half an ulp): any 1-15 digit answer is the 15-digit one less its
    trailing zeros, and a 15-digit one that reads back makes the 16-digit one read back too.
    Powers of two (lopsided ulps) and near-ties are not sure.
    """
    mant, exp2 = np.frexp(a)
    s = np.clip(15 - np.floor(np.log10(a)).astype(np.int64), 0, 19)  # index of 10**(s+1) in _TEN
    y, y_low = _scaled(a, s)
    off = (y < 1e16).astype(np.int64) - (y >= 1e17)  # log10 rounded across a power of ten
    if off.any():
        s = np.clip(s + off, 0, 19)
        y, y_low = _scaled(a, s)
    floor = np.floor(y_low)
    whole = y.astype(np.int64) + floor.astype(np.int64)
    frac = y_low - floor
    half_ulp = np.ldexp(_TEN[s], exp2 - 54)
    r100 = (whole % 100).astype(np.float64)
    r10 = r100 - 10 * np.floor(r100 * 0.1)
    up15, up16, up17 = r100 + frac > 50, r10 + frac > 5, frac > 0.5
    err15, err16 = np.abs(up15 * 100 - (r100 + frac)), np.abs(up16 * 10 - (r10 + frac))
    sure = (whole >= 10 ** 16) & (whole < 10 ** 17 - 100) & (mant != 0.5)
    for gap in (frac - 0.5, r10 + frac - 5, err15 - half_ulp, err16 - half_ulp):
        sure &= np.abs(gap) > _TIE
    in15, in16 = err15 < half_ulp, err16 < half_ulp
    cut17, cut16, cut15 = -1.0 * up17, r10 - 10 * up16, r100 - 100 * up15  # what rounding takes off
    digits = whole - (cut17 + in16 * (cut16 - cut17) + in15 * (cut15 - cut16)).astype(np.int64)
    shown = 17 - in16 - in15.astype(np.int64)
    short = np.flatnonzero(in15)
    rest = digits[short] // 100
    while short.size:  # 15 digits and fewer: drop trailing zeros
        zero = rest % 10 == 0
        shown[short[zero]] -= 1
        short, rest = short[zero], rest[zero] // 10
    return digits, shown, 16 - s, sure


def _scaled(a: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a * _TEN[s] exactly, as y + y_low (Dekker's two-product)."""
    y = a * _TEN[s]
    big = a * _SPLIT
    a_hi = big - (big - a)
    a_lo = a - a_hi
    t_hi, t_lo = _TEN_HI[s], _TEN_LO[s]
    return y, ((a_hi * t_hi - y) + a_hi * t_lo + a_lo * t_hi) + a_lo * t_lo
