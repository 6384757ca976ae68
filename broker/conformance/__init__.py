"""Conformance: what each client sends, checked against Apache RocketMQ's Java client 4.9.8.

* :mod:`.findings`: observations, findings (per client, counted, first and last seen), the log;
* :mod:`.request_rules`: codes, language/version/serialize type, header keys and values;
* :mod:`.message_rules`: topics, properties, bodies, delays, tags of the messages sent;
* :mod:`.session_rules`: heartbeats, unregistering, offsets, long polling, check-backs;
* :mod:`.monitor`: the cluster hook that runs the rules on every request (Twisted edge);
* :mod:`.report`: ``conformance.json`` and ``conformance.html``.

Severities: ``error`` (the real broker misbehaves or refuses), ``warning`` (works, but differs
from the Java client), ``info``.
"""
