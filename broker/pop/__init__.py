"""RocketMQ 5 POP consumption: the wire vocabulary first (:mod:`.extra_info`, the check-point /
receipt-handle strings); the processors that serve POP_MESSAGE, ACK_MESSAGE and friends come later."""
