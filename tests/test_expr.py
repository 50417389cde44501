import pytest

from evo.core.expr import Expr, ExprError

NAMES = frozenset({"M", "N", "K", "num_sms"})


def ev(text, **env):
    return Expr(text, names=NAMES).evaluate({"M": 100, "N": 64, "K": 8, "num_sms": 132, **env})


def test_arithmetic_and_functions():
    assert ev("cdiv(M, 64) * cdiv(N, 32)") == 2 * 2
    assert ev("min(num_sms, M * 2)") == 132
    assert ev("M / 3") == 33  # integer division
    assert ev("K % 8 == 0 and N % 8 == 0") is True
    assert ev("K % 16 == 0 || N > 1000") is False


@pytest.mark.parametrize("text", [
    "__import__('os').system('x')", "M.__class__", "open('f')", "[1, 2]", "lambda: 1", "M if K else N",
    "2.5 * M", "'a'", "X + 1", "max(M)", "cdiv(M, N, K)", "M ** 2",
])
def test_anything_else_is_refused(text):
    with pytest.raises(ExprError):
        Expr(text, names=NAMES)


def test_division_by_zero_is_an_error_not_a_crash():
    with pytest.raises(ExprError, match="zero"):
        ev("M / (K - 8)")
