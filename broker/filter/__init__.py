"""SQL92 property filters (``MessageSelector.bySql``): grammar, evaluation, pull-side filter.

* :mod:`broker.filter.parser` — the grammar (written down there, parsed with ``lark``) and the
  compile-time checks of RocketMQ's ``SelectorParser`` / ``ComparisonExpression``;
* :mod:`broker.filter.expression` — the expression tree with the Java evaluation rules
  (three-valued logic, String↔number conversion, unknown property → comparison not true);
* :mod:`broker.filter.message_filter` — ``ExpressionMessageFilter``: match a stored record's
  properties on pull.
"""

from broker.filter.expression import EvalError
from broker.filter.parser import FilterError, compile_sql92

__all__ = ["EvalError", "FilterError", "compile_sql92"]
