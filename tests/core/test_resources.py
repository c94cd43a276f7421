from hypothesis import given
from hypothesis import strategies as st

from dlsched.core import Resources

amounts = st.floats(min_value=0, max_value=1e6, allow_nan=False)


@given(amounts, amounts, amounts, amounts, amounts, amounts)
def test_add_then_sub_round_trips(a, b, c, d, e, f):
    x, y = Resources(a, b, c), Resources(d, e, f)
    back = (x + y) - y
    assert abs(back.gpu - a) <= 1e-6 * max(1, a + d)
    assert abs(back.cpu - b) <= 1e-6 * max(1, b + e)
    assert abs(back.mem - c) <= 1e-6 * max(1, c + f)


def test_dominant_share_takes_the_largest_fraction():
    total = Resources(gpu=10, cpu=100, mem=1000)
    assert Resources(gpu=1, cpu=50, mem=10).dominant_share(total) == 0.5
    assert Resources(gpu=3).dominant_share(total) == 0.3


def test_dominant_share_ignores_resources_the_total_lacks():
    assert Resources(gpu=1, cpu=2).dominant_share(Resources(cpu=4)) == 0.5


def test_fits_in():
    cap = Resources(gpu=2, cpu=8, mem=16)
    assert Resources(gpu=2, cpu=8, mem=16).fits_in(cap)
    assert not Resources(gpu=3).fits_in(cap)
