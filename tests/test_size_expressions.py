"""Size expressions as the engine expands them (`--plan`, the one size grammar) and as
mpiscope passes them on: the grammar of docs/engine.md, one-line errors, and never a crash."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpiscope.util.errors import UsageError
from mpiscope.plan.engine import expand_sizes
from mpiscope.records.model import SIZE_MAX_BYTES


@pytest.fixture(scope="module")
def parse_sizes(mpich_engine):
    return lambda expr, units="bytes": expand_sizes(mpich_engine, expr, units)


@pytest.mark.parametrize("expr, sizes", [
    ("0", [0]),
    ("1:16", [1, 2, 4, 8, 16]),
    ("3:16", [4, 8, 16]),
    ("0:4", [0, 1, 2, 4]),
    ("1:4M", [2**k for k in range(23)]),
    ("1:100:*10", [1, 10, 100]),
    ("1:200:+64", [1, 65, 129, 193]),
    ("1:16:2^k-1", [1, 2, 3, 4, 7, 8, 15, 16]),
    ("0:8:2^k-1", [0, 1, 2, 3, 4, 7, 8]),
    ("4K,1K,4K", [1024, 4096]),
    ("1kb,2M", [1024, 2 << 20]),
    ("1, 2,,", [1, 2]),
])
def test_examples(parse_sizes, expr, sizes):
    assert parse_sizes(expr) == sizes


def test_words_are_eight_bytes(parse_sizes):
    assert parse_sizes("1:4", units="words") == [8, 16, 32]


@pytest.mark.parametrize("expr, fragment", [
    ("", "empty"),
    (",", "gives no sizes"),
    ("x", "not a size"),
    ("-1", "not a size"),
    ("4X", "unknown suffix"),
    ("8:4", "start is larger"),
    ("1:2:3:4", "at most three parts"),
    ("1:8:*1", "step"),
    ("1:8:+0", "step"),
    ("1:8:foo", "unknown step"),
    ("2G", "2^31-1"),
    ("1 ", "unknown suffix"),
    ("2147483647G", "2^31-1"),
    ("1:64:*0x2", "step"),
    ("1:64:*inf", "step"),
])
def test_errors_say_what_is_wrong(parse_sizes, expr, fragment):
    with pytest.raises(UsageError, match=None) as e:
        parse_sizes(expr)
    assert fragment in str(e.value)


number = st.one_of(st.integers(0, 5000).map(str), st.integers(0, 4).map(lambda k: f"{k}K"),
                   st.sampled_from(["1M", "4M", "2G", "3X", "", "k", "-2"]))
term = st.one_of(number,
                 st.builds(lambda a, b: f"{a}:{b}", number, number),
                 st.builds(lambda a, b, s: f"{a}:{b}:{s}", number, number,
                           st.sampled_from(["*2", "*3", "*1", "+1", "+100", "+0", "2^k-1", "x", ""])))
expression = st.lists(term, min_size=0, max_size=4).map(",".join)


@settings(max_examples=400, deadline=None)
@given(expression, st.sampled_from(["bytes", "words"]))
def test_any_expression_parses_or_is_a_usage_error(parse_sizes, expr, units):
    try:
        sizes = parse_sizes(expr, units)
    except UsageError as e:
        assert str(e)
        return
    assert sizes == sorted(set(sizes))
    assert all(0 <= s <= SIZE_MAX_BYTES for s in sizes)
    if units == "words":
        assert all(s % 8 == 0 for s in sizes)


def test_words_that_overflow_are_rejected(parse_sizes):
    with pytest.raises(UsageError, match="2\\^31-1"):
        parse_sizes("2147483647G", "words")
    with pytest.raises(UsageError, match="2\\^31-1"):
        parse_sizes("268435456", "words")
    assert parse_sizes("268435455", "words") == [268435455 * 8]


def test_real_geometric_steps_follow_the_ring_case_study(parse_sizes):
    # n = max(nint(1.2 n), n + 1), counted in words, as the ring study's driver grows sizes
    words = [b // 8 for b in parse_sizes("0:30:*1.2", "words")]
    assert words == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 17, 20, 24, 29]
    assert parse_sizes("3:40:*2") == [3, 6, 12, 24]      # an explicit step starts at A
    assert parse_sizes("3:40") == [4, 8, 16, 32]         # A:B alone: powers of two
