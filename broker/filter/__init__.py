"""SQL92 property filters (``MessageSelector.bySql``): grammar, evaluation, pull-side filter.

* :mod:`rocketmq_emu.broker.filter.parser` — the grammar (written down there, parsed with ``lark``) and the
  compile-time checks of RocketMQ's ``SelectorParser`` / ``ComparisonExpression``;
* :mod:`rocketmq_emu.broker.filter.expression` — the expression tree with the Java evaluation rules
  (three-valued logic, String↔number conversion, unknown property → comparison not true);
* :mod:`rocketmq_emu.broker.filter.message_filter` — ``ExpressionMessageFilter``: match a stored record's
  properties on pull.
"""

from typing import Any

from rocketmq_emu.broker.filter.errors import FilterError
from rocketmq_emu.broker.filter.expression import EvalError

__all__ = ["EvalError", "FilterError", "compile_sql92"]


def __getattr__(name: str) -> Any:
    # The parser imports lark and builds its grammar: only when first asked for (PEP 562).
    if name == "compile_sql92":
        from rocketmq_emu.broker.filter.parser import compile_sql92

        return compile_sql92
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
