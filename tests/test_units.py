import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hcsim.errors import HcsimError
from hcsim.units import parse_bandwidth, parse_bytes, parse_flops, parse_time


@pytest.mark.parametrize(
    "text, expected",
    [
        ("128GBps", 128e9),
        ("12.5GB/s", 12.5e9),
        ("100Gbps", 12.5e9),
        ("64GiBps", 64 * 2**30),
        ("900 GBps", 900e9),
        (5e9, 5e9),
    ],
)
def test_bandwidth(text, expected):
    assert parse_bandwidth(text) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(
    "text, expected",
    [("200ns", 2e-7), ("5us", 5e-6), ("1.5ms", 1.5e-3), ("2s", 2.0), ("250ns", 2.5e-7), ("1min", 60.0), (0, 0.0)],
)
def test_time_is_exact_for_decimal_prefixes(text, expected):
    assert parse_time(text) == expected  # exact: 200 / 1e9, not 200 * 1e-9


def test_bytes_and_flops():
    assert parse_bytes("80GiB") == 80 * 2**30
    assert parse_bytes("32GB") == 32e9
    assert math.isinf(parse_bytes("inf"))
    assert parse_flops("67TFLOPS") == 67e12
    assert parse_flops("989.4Tf") == pytest.approx(989.4e12)


@pytest.mark.parametrize("bad", ["12 GBs", "fast", "128XBps", "", "1e3 Qf", None, True])
def test_unparseable_units_name_the_item(bad):
    with pytest.raises(HcsimError, match="link bandwidth"):
        parse_bandwidth(bad, "link bandwidth")


@given(st.floats(min_value=1e-3, max_value=1e6, allow_nan=False), st.sampled_from(["k", "M", "G", "T"]))
def test_decimal_prefixes_scale_by_powers_of_ten(x, prefix):
    factor = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[prefix]
    assert parse_bandwidth(f"{x!r}{prefix}Bps") == pytest.approx(x * factor, rel=1e-12)
    assert parse_bandwidth(f"{x!r}{prefix}bps") == pytest.approx(x * factor / 8, rel=1e-12)


@pytest.mark.parametrize("parse", [parse_bandwidth, parse_bytes, parse_flops, parse_time])
def test_numbers_are_taken_as_si_units_whatever_their_type(parse):
    """Plain floats take a shortcut; ints, float subclasses and the refusals take the full path."""

    class Rate(float):
        pass

    for value in (128e9, 3.0, 0.0, math.inf):
        assert parse(value) == value and type(parse(value)) is float
    assert parse(7) == 7.0 and type(parse(7)) is float
    assert parse(Rate(2.5)) == 2.5 and type(parse(Rate(2.5))) is float
    for bad in (True, None, [1.0]):
        with pytest.raises(HcsimError, match="is not a quantity"):
            parse(bad, "link 'a'--'b'")
