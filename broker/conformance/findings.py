"""What the conformance checks found: one :class:`Observation` per deviation a rule sees, kept
as a :class:`Finding` per client and deviation (counted, with first and last time seen).

Pure: the rules return observations (bytes and values in, observations out); :class:`Findings`
is the thread-safe log the broker, the control API and the reports read.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any

#: The real broker misbehaves with it or refuses it.
ERROR = "error"
#: It works, but differs from what Apache RocketMQ's Java client sends.
WARNING = "warning"
#: Worth knowing; nothing goes wrong.
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)
#: What each severity means, as the HTML report's legend says it.
DESCRIPTIONS = {
    ERROR: "the real broker misbehaves with it or refuses it",
    WARNING: "it works, but differs from what Apache RocketMQ's Java client sends",
    INFO: "worth knowing; nothing goes wrong",
}
_RANK = {ERROR: 0, WARNING: 1, INFO: 2}


@dataclass(frozen=True, slots=True)
class Observation:
    """One deviation a rule saw in one request (or one moment of a session).

    ``kind`` names the rule (``"header.boolean"``); ``field`` the header key, property or
    session aspect; ``sent`` what the client sent; ``expected`` what the Java client sends or
    what the broker does with it; ``java_class`` the Apache RocketMQ class defining it.
    """

    kind: str
    severity: str
    code: int | None
    field: str
    sent: str
    expected: str
    message: str
    java_class: str


@dataclass(frozen=True, slots=True)
class Client:
    """Who sent it, as the frames name it: ``client_id`` from a ``clientID`` (else the
    address), the LanguageCode name and the MQVersion ordinal of the request (a 5.x SDK's
    ``x-mq-client-version`` string for a gRPC client)."""

    client_id: str
    address: str
    language: str
    version: int | str


@dataclass(slots=True)
class Finding:
    """A deviation of one client: the observation, how often and when (epoch ms)."""

    client: Client
    observation: Observation
    first_seen_ms: int
    last_seen_ms: int
    count: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def severity(self) -> str:
        return self.observation.severity

    def to_json(self) -> dict[str, Any]:
        """The finding as the control API and ``conformance.json`` show it (flat)."""
        out: dict[str, Any] = {
            "clientId": self.client.client_id,
            "address": self.client.address,
            "language": self.client.language,
            "version": self.client.version,
        }
        obs = asdict(self.observation)
        out.update(
            kind=obs["kind"],
            severity=obs["severity"],
            code=obs["code"],
            field=obs["field"],
            sent=obs["sent"],
            expected=obs["expected"],
            message=obs["message"],
            javaClass=obs["java_class"],
            firstSeen=self.first_seen_ms,
            lastSeen=self.last_seen_ms,
            count=self.count,
        )
        return out


def _key(client: Client, obs: Observation) -> tuple:
    return (client.client_id, client.language, obs.kind, obs.code, obs.field, obs.sent)


#: At most this many findings and clients are kept (a long-running emulator serving many
#: short-lived clients); past it new ones are counted in ``dropped``, known ones still counted.
MAX_ENTRIES = 10_000


class Findings:
    """The log of findings, one per (client, rule, code, field, value sent); thread-safe
    (the report writer and the control API read it from other threads)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple, Finding] = {}
        self._clients: dict[tuple[str, str], Client] = {}
        self.max_entries = max_entries
        #: Findings and clients not kept because the log was full.
        self.dropped = 0

    def note_client(self, client: Client) -> None:
        """Remember a client that sent something (listed even with no finding)."""
        key = (client.client_id, client.language)
        if key not in self._clients:
            with self._lock:
                if len(self._clients) < self.max_entries:
                    self._clients.setdefault(key, client)
                else:
                    self.dropped += 1

    def add(self, client: Client, obs: Observation, now_ms: int) -> Finding:
        """Record ``obs`` for ``client`` seen at ``now_ms``; returns the (updated) finding
        (a new one is not kept once the log holds ``max_entries``)."""
        key = _key(client, obs)
        with self._lock:
            found = self._by_key.get(key)
            if found is None:
                found = Finding(client, obs, now_ms, now_ms)
                if len(self._by_key) < self.max_entries:
                    self._by_key[key] = found
                else:
                    self.dropped += 1
            else:
                found.count += 1
                found.last_seen_ms = max(found.last_seen_ms, now_ms)
            return found

    def rename_client(self, address: str, client: Client) -> None:
        """Findings recorded under ``address`` (before the client named itself) move to
        ``client``'s id."""
        with self._lock:
            for key, found in list(self._by_key.items()):
                old = found.client
                if old.client_id == address and old.address == address:
                    del self._by_key[key]
                    found.client = Client(client.client_id, address, old.language, old.version)
                    new_key = _key(found.client, found.observation)
                    same = self._by_key.get(new_key)
                    if same is None:
                        self._by_key[new_key] = found
                    else:
                        same.count += found.count
                        same.first_seen_ms = min(same.first_seen_ms, found.first_seen_ms)
                        same.last_seen_ms = max(same.last_seen_ms, found.last_seen_ms)
            for key in [k for k in self._clients if k[0] == address]:
                old = self._clients.pop(key)
                self._clients.setdefault((client.client_id, old.language), Client(
                    client.client_id, address, old.language, old.version))

    def all(self) -> list[Finding]:
        """Every finding, errors first, then by client and first time seen."""
        with self._lock:
            found = list(self._by_key.values())
        return sorted(found, key=lambda f: (_RANK.get(f.severity, 3), f.client.client_id,
                                            f.first_seen_ms, f.observation.kind))

    def clear(self) -> None:
        """Forget every finding."""
        with self._lock:
            self._by_key.clear()
            self._clients.clear()
            self.dropped = 0

    def to_json(self) -> dict[str, Any]:
        """``{"findings": [...], "summary": {"error": n, "warning": n, "info": n},
        "clients": [...]}`` (and ``"dropped": n`` once the log was full): what
        ``GET /conformance`` and ``conformance.json`` hold."""
        found = self.all()
        summary = {s: 0 for s in SEVERITIES}
        clients: dict[tuple[str, str], dict[str, Any]] = {}
        with self._lock:
            known = list(self._clients.values())
        for c in known:
            clients[(c.client_id, c.language)] = {
                "clientId": c.client_id, "address": c.address, "language": c.language,
                "version": c.version, "error": 0, "warning": 0, "info": 0}
        for f in found:
            summary[f.severity] = summary.get(f.severity, 0) + 1
            c = f.client
            entry = clients.setdefault((c.client_id, c.language), {
                "clientId": c.client_id, "address": c.address, "language": c.language,
                "version": c.version, "error": 0, "warning": 0, "info": 0})
            entry[f.severity] += 1
        out: dict[str, Any] = {"findings": [f.to_json() for f in found], "summary": summary,
                               "clients": list(clients.values())}
        if self.dropped:
            out["dropped"] = self.dropped
        return out
