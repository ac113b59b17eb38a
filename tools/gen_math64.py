#!/usr/bin/env python3
"""
gen_math64.py -- the constants of src/ptx/ptx_math64.c, computed exactly
with Python integers and decimal (no floating-point library routines):
the bits of 2/pi for the sin/cos reduction, ln c (as a double plus a
correction) for the 32 reduction points c of the logarithm, and the
double-plus-correction splits of ln 2 (also one whose high part has 42
bits, so that its products with exponents are exact), pi/2 and log2(e).
  python3 tools/gen_math64.py
"""
from decimal import Decimal, getcontext
from fractions import Fraction

getcontext().prec = 80
BITS = 1400


def arctan_inv(n, scale):
    """arctan(1/n) * 2^scale, rounded down, by its Taylor series in integers."""
    total, term, k, sign = 0, (1 << scale) // n, 1, 1
    while term:
        total += sign * (term // k)
        term //= n * n
        k += 2
        sign = -sign
    return total


# pi * 2^BITS by Machin's formula (a few guard bits dropped at the end)
PI = (16 * arctan_inv(5, BITS + 16) - 4 * arctan_inv(239, BITS + 16)) >> 16
PI_FRAC = Fraction(PI, 1 << BITS)


def split(x):
    """x (a Fraction or Decimal) as a double hi plus a double lo = x - hi."""
    hi = float(x)
    lo = float(Fraction(x) - Fraction(hi))
    return hi, lo


def dec(fr):
    return Decimal(fr.numerator) / Decimal(fr.denominator)


def main():
    # 2/pi after one zero word, 64 bits a word, most significant first
    two_over_pi = (1 << (2 * BITS + 1)) // PI    # 2/pi * 2^BITS
    words = [0]
    for i in range(19):
        words.append((two_over_pi >> (BITS - 64 * (i + 1))) & (2 ** 64 - 1))
    print("/* 64 zero bits, then the first %d bits of 2/pi (weights 2^-1 on) */" % (64 * 19))
    print("static const uint64_t two_over_pi[20] = {")
    for i in range(0, 20, 4):
        print("  " + ", ".join("0x%016XULL" % w for w in words[i:i + 4]) + ",")
    print("};")

    ln2 = Decimal(2).ln()
    hi = Fraction(round(Fraction(ln2) * 2 ** 42), 2 ** 42)    # 42 bits: k * hi is exact for |k| < 2^11
    print("#define LN2_CW_HI %s\n#define LN2_CW_LO %s" % (float(hi).hex(), float(Fraction(ln2) - hi).hex()))
    h, l = split(ln2)
    print("#define LN2_HI %s\n#define LN2_LO %s" % (h.hex(), l.hex()))
    h, l = split(PI_FRAC / 2)
    print("#define PIO2_HI %s\n#define PIO2_LO %s" % (h.hex(), l.hex()))
    h, l = split(1 / Fraction(ln2))
    print("#define LOG2E_HI %s\n#define LOG2E_LO %s" % (h.hex(), l.hex()))

    # c_j: the middle of the j-th 32nd of [1, 2) for j <= 13, of [1/2, 1) for j >= 14, and 1 for the
    # 32nds that hold 1 (j = 0 and 31), so that logs near 1 have no cancellation
    cs = []
    for j in range(32):
        c = Fraction(64 + 2 * j + 1, 64)
        if j >= 14:
            c /= 2
        if j in (0, 31):
            c = Fraction(1)
        cs.append(c)
    print("/* ln c_j (hi, lo), c_j = 1 for j = 0 and 31, else the middle of the j-th 32nd of [1, 2) (j <= 13) or [1/2, 1) */")
    pairs = [split(dec(c).ln()) for c in cs]
    for name, k in (("log_c_hi", 0), ("log_c_lo", 1)):
        print("static const double %s[32] = {" % name)
        for i in range(0, 32, 4):
            print("  " + ", ".join(p[k].hex() for p in pairs[i:i + 4]) + ",")
        print("};")


main()
