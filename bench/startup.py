"""Cold start and idle memory of ``rmq-emu up``.

Measures, in one run:

* two floors: wall time of ``python -c "import twisted"`` (interpreter start + Twisted's package)
  and of ``python -c "from twisted.internet import reactor"`` (what any Twisted server pays; the
  server commands import it without pyOpenSSL, ``broker/default_reactor.py``, so they start
  below that floor);
* ``rmq-emu --help``: wall time until it exits (argparse only: no subcommand's area imported);
* ``rmq-emu up`` (name server + broker, fresh temporary store, free ports): wall time from spawn
  until both the name server and the broker port accept a TCP connection, and the CPU time
  (user + system) the process had used by then: on a shared machine the CPU time moves far less
  than the wall time, so compare two trees by it (``--cpu`` prints the floors' CPU time too);
* the idle RSS of that process after it has been idle for ``--idle`` seconds, split into the
  process's own memory (``RssAnon``: interpreter, code, heap) and file-backed pages (``RssFile`` +
  ``RssShmem``: shared libraries, and the store pages touched so far).

Both are measured for the default configuration and for a ``broker.conf`` with a 64 MiB
commitlog file (``mappedFileSizeCommitLog``), to show what the pre-touched mapping costs.
Prints the medians over ``--runs`` runs, the ratio start / floor, and checks the targets
(start < 300 ms, idle RSS < 60 MB, ``--help`` < 150 ms) on the default configuration. Exit status 1
if one is missed.

Bytecode: an installed package has its ``.pyc`` files (pip compiles them), so every child runs
with a bytecode cache in a temporary ``PYTHONPYCACHEPREFIX`` even when the caller's environment
sets ``PYTHONDONTWRITEBYTECODE`` (then every start would compile the sources: about +80 ms here);
one unmeasured run of each command fills it.

    .venv/bin/python bench/startup.py [--runs 5] [--idle 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
START_TARGET_S = 0.3
RSS_TARGET_MB = 60.0
HELP_TARGET_S = 0.15
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broker_port() -> int:
    for _ in range(500):
        p = free_port()
        if p > 2000:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p - 2))
                except OSError:
                    continue
            return p
    raise RuntimeError("no free port pair")


def accepting(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.05)
        try:
            s.connect(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``python ARGS`` run to its exit."""
    c0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0, _children_cpu() - c0


def median_run(args: list[str], runs: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of ``runs`` runs after one unmeasured (page cache, bytecode)
    run."""
    timed_run(args)
    samples = [timed_run(args) for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def rss_parts(pid: int) -> tuple[float, float, float]:
    """(RSS, RssAnon, RssFile + RssShmem) in MB, from /proc (psutil's rss if unavailable)."""
    total = psutil.Process(pid).memory_info().rss / 2**20
    fields = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile", "RssShmem"):
                fields[key] = int(value.split()[0]) / 1024
    except OSError:
        return total, total, 0.0
    return total, fields.get("RssAnon", total), fields.get("RssFile", 0.0) + fields.get("RssShmem", 0.0)


def up_once(idle: float, conf: str | None = None) -> tuple[float, tuple[float, float, float], float]:
    """(seconds until both ports accept, RSS parts in MB, CPU seconds used until then)."""
    store = Path(tempfile.mkdtemp(prefix="rmq-emu-bench-"))
    ns, bp = free_port(), broker_port()
    cmd = [sys.executable, "-m", "rocketmq_emu.broker.cli", "up", "--store", str(store / "store"),
           "--namesrv-port", str(ns), "--broker-port", str(bp)]
    if conf is not None:
        path = store / "broker.conf"
        path.write_text(conf)
        cmd += ["-c", str(path)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        ready_ns = ready_broker = False
        while not (ready_ns and ready_broker):
            if proc.poll() is not None:
                raise RuntimeError(f"rmq-emu up exited {proc.returncode}: "
                                   f"{proc.stderr.read().decode(errors='replace')[-2000:]}")
            if time.perf_counter() - t0 > 60:
                raise RuntimeError("rmq-emu up not accepting connections after 60 s")
            ready_ns = ready_ns or accepting(ns)
            ready_broker = ready_broker or accepting(bp)
            if not (ready_ns and ready_broker):
                time.sleep(0.005)
        started = time.perf_counter() - t0
        times = psutil.Process(proc.pid).cpu_times()
        time.sleep(idle)
        return started, rss_parts(proc.pid), times.user + times.system
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(store, ignore_errors=True)


PHASES = r"""
import shutil, sys, tempfile, time
t0 = time.perf_counter()
from twisted.internet import defer
from rocketmq_emu.broker.default_reactor import default_reactor
reactor = default_reactor()  # as the server commands import it: without pyOpenSSL
t_twisted = time.perf_counter()
from rocketmq_emu.broker.cli import load_config
from rocketmq_emu.broker.controller import BrokerController
from rocketmq_emu.namesrv.server import NameServer
t_import = time.perf_counter()
store = tempfile.mkdtemp(prefix="rmq-emu-phase-")
ns_port, broker_port = int(sys.argv[1]), int(sys.argv[2])
cfg = load_config(None, store=store, port=broker_port, namesrv=f"127.0.0.1:{ns_port}")
out = {}

@defer.inlineCallbacks
def run():
    ns = NameServer(reactor, port=ns_port, host="127.0.0.1")
    yield ns.start()
    out["namesrv"] = time.perf_counter()
    b = BrokerController(cfg, reactor=reactor, host="127.0.0.1")
    yield b.start()
    out["broker"] = time.perf_counter()
    yield b.stop()
    yield ns.stop()
    reactor.stop()

reactor.callWhenRunning(run)
try:
    reactor.run()
finally:
    shutil.rmtree(store, ignore_errors=True)  # a 1 GiB commitlog per run otherwise
print(f"{t_twisted - t0:.4f} {t_import - t_twisted:.4f} {out['namesrv'] - t_import:.4f} "
      f"{out['broker'] - out['namesrv']:.4f}")
"""


def phases_once() -> list[float]:
    """In-process phases (s): Twisted import, emulator imports, name server start, broker start."""
    out = subprocess.run([sys.executable, "-c", PHASES, str(free_port()), str(broker_port())],
                         cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120, check=True)
    return [float(x) for x in out.stdout.split()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle", type=float, default=2.0, help="seconds idle before reading RSS")
    parser.add_argument("--cpu", action="store_true",
                        help="also print the CPU time of the floors and of --help")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    pyc = tempfile.mkdtemp(prefix="rmq-emu-bench-pyc-")
    ENV.setdefault("PYTHONPYCACHEPREFIX", pyc)
    try:
        return run(args)
    finally:
        shutil.rmtree(pyc, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    """The measurements; exit status 1 if a target is missed."""
    floor, floor_cpu = median_run(["-c", "import twisted"], args.runs)
    reactor_floor, reactor_cpu = median_run(["-c", "from twisted.internet import reactor"],
                                            args.runs)
    help_s, help_cpu = median_run(["-m", "rocketmq_emu.broker.cli", "--help"], args.runs)
    print(f"floor  python -c 'import twisted'            {floor * 1000:8.1f} ms")
    print(f"floor  python -c 'from twisted.internet import reactor'"
          f"{reactor_floor * 1000:8.1f} ms")
    print(f"help   rmq-emu --help                      {help_s * 1000:8.1f} ms   "
          f"(target < {HELP_TARGET_S * 1000:.0f} ms)")
    if args.cpu:
        print(f"cpu    python -c 'import twisted'            {floor_cpu * 1000:8.1f} ms")
        print(f"cpu    python -c 'from twisted.internet import reactor'"
              f"{reactor_cpu * 1000:8.1f} ms")
        print(f"cpu    rmq-emu --help                      {help_cpu * 1000:8.1f} ms")
    verdict = help_s < HELP_TARGET_S
    for label, conf in (("default", None),
                        ("64 MiB commitlog", f"mappedFileSizeCommitLog={64 * 2**20}\n")):
        up_once(0.0, conf)  # unmeasured: fills the bytecode cache
        ups = [up_once(args.idle, conf) for _ in range(args.runs)]
        start = statistics.median(u[0] for u in ups)
        rss = statistics.median(u[1][0] for u in ups)
        anon = statistics.median(u[1][1] for u in ups)
        mapped = statistics.median(u[1][2] for u in ups)
        cpu = statistics.median(u[2] for u in ups)
        print(f"[{label}]")
        print(f"start  rmq-emu up -> both ports accept     {start * 1000:8.1f} ms   "
              f"(ratio to floor {start / floor:.1f}x; target < {START_TARGET_S * 1000:.0f} ms)")
        print(f"cpu    rmq-emu up CPU until both accept    {cpu * 1000:8.1f} ms   "
              f"(the reactor floor's: {reactor_cpu * 1000:.1f} ms)")
        print(f"idle   RSS                                 {rss:8.1f} MB   "
              f"(target < {RSS_TARGET_MB:.0f} MB)")
        print(f"         own memory (RssAnon)              {anon:8.1f} MB")
        print(f"         file-backed (RssFile+Shmem)       {mapped:8.1f} MB   "
              "(shared libraries + touched store pages)")
        print(f"runs   start ms {[round(u[0] * 1000) for u in ups]}, "
              f"CPU ms {[round(u[2] * 1000) for u in ups]}, "
              f"RSS MB {[round(u[1][0], 1) for u in ups]}")
        if conf is None:
            verdict = verdict and start < START_TARGET_S and rss < RSS_TARGET_MB
    phases_once()  # unmeasured: fills the bytecode cache
    phases = [phases_once() for _ in range(args.runs)]
    names = ("import the reactor (as `up`: no pyOpenSSL)", "import broker + namesrv", "name server start",
             "broker start (store load + files + listen + register)")
    print("[where the default start goes, in-process medians]")
    for i, name in enumerate(names):
        print(f"         {name:55s}{statistics.median(p[i] for p in phases) * 1000:8.1f} ms")
    print("result (default configuration):", "OK" if verdict else "MISSED")
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())
