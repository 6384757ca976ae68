"""The SQL92 filter's compile error, in a module of its own so that code which only catches or
raises it (the pull and client-config paths) does not import the ``lark`` parser: building the
grammar costs ~0.1-0.3 s, paid only once a SQL92 subscription actually appears."""

from __future__ import annotations


class FilterError(ValueError):
    """A SQL92 expression that does not compile (``MQFilterException``).

    ``str(err)`` is what RocketMQ puts in the response remark: the cause's class and message.
    """

    def __init__(self, java_class: str, message: str, expression: str = "") -> None:
        self.java_class = java_class
        self.detail = message
        self.expression = expression
        super().__init__(f"{java_class}: {message}")
