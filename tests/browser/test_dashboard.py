"""The dashboard in a real browser (headless chromium) against ``rmq-emu up --control-port``,
with messages sent and consumed by a real client (PyPI ``rocketmq`` 0.4.4, the C++ client).

The tests run in order on one emulator and one page, as a person would use it: find the topic
and its queue offsets, find a message by key and read its body, watch a group's lag reach 0,
move a manual clock to deliver a delayed message, add a fault and see the next send fail and
the request log show it. Each view is photographed (``<tmp>/screenshots``), and the console
must stay free of errors and warnings throughout.
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from dashboard_page import DashboardPage
from interop_support import ClientLauncher, start_emulator, stop_emulator, unique

from rocketmq_emu.client.testing import free_port

TOPIC = unique("DashTopic")
GROUP = unique("DashGroup")
COUNT = 8
#: A body a careless page would run: it must be shown as text.
HOSTILE = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    port = free_port()
    emulator = start_emulator(tmp_path_factory.mktemp("dashboard"), control_port=port)
    try:
        yield emulator
    finally:
        stop_emulator(emulator)


@pytest.fixture(scope="module")
def clients(emu, tmp_path_factory, pypi_rocketmq):
    launcher = ClientLauncher(tmp_path_factory.mktemp("clients"), emu, pypi_rocketmq, None)
    try:
        yield launcher
    finally:
        launcher.close()


@pytest.fixture(scope="module")
def page(driver, emu, tmp_path_factory):
    return DashboardPage(driver, emu.control + "/", tmp_path_factory.mktemp("screenshots"))


@pytest.fixture(autouse=True)
def quiet_console(page):
    """No error or warning in the browser's console during any test."""
    page.console()  # what an earlier test left was judged there
    yield
    assert page.console() == []


def api(emu, path: str):
    with urllib.request.urlopen(emu.control + path, timeout=10) as resp:
        return json.loads(resp.read())


def post(emu, path: str):
    req = urllib.request.Request(emu.control + path, data=b"{}", method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def send(clients, count: int, prefix: str, *extra: str):
    return clients.run_python("py_producer.py", "--topic", TOPIC, "--mode", "sync", "--count",
                              str(count), "--group", "PID_dash", "--key-prefix", prefix,
                              "--body-prefix", HOSTILE, *extra)


def search_by_key(page, key: str) -> None:
    """Search the topic's messages by ``key`` in the Messages view until the result lists it."""
    page.open(f"messages?topic={TOPIC}")
    page.type("#msg-topic", TOPIC)
    page.type("#msg-key", key)
    page.click("#msg-search-btn")
    page.wait_text("#messages tbody", lambda t: key in t)


def test_cluster_view_shows_the_running_broker(page):
    page.open("cluster")
    page.wait_text("#brokers tbody", lambda t: "broker-a" in t and "V4_9_8" in t)
    page.shot("cluster")


def test_the_rate_charts_scale_reads_as_the_values_it_marks(page):
    """The put/get chart's five y labels are the values of its grid lines (0 and quarters of
    the top), each written so it reads as that value (0.25, not 0.3)."""
    page.open("cluster")
    labels = page.wait_for(
        lambda: [e.text for e in page.all("#tps-chart text.tick")][:5] or None, "the chart")
    top = float(labels[4])
    assert top > 0 and [float(v) for v in labels] == [top * i / 4 for i in range(5)], labels


def test_a_topic_created_in_the_page_lists_its_queue_offsets(page, clients):
    page.open("topics")
    page.type("#new-topic", TOPIC)
    page.type("#new-queues", "2")
    page.click("#create-topic")
    page.type("#topic-filter", TOPIC)
    page.wait_text("#topics tbody", lambda t: TOPIC in t)
    sent = send(clients, COUNT, "key")
    assert len(sent.events("sent")) == COUNT, sent.diagnostics()
    page.click(f"a.topic-link[href='#/topics/{TOPIC}']")
    page.wait_text("#view h1", lambda t: TOPIC in t)
    page.wait_for(lambda: sum(int(r[2]) for r in page.rows("#queues")) == COUNT,
                  f"the queues' max offsets add up to {COUNT}")
    page.shot("topic")


def test_a_message_found_by_key_shows_its_body_as_text(page, driver):
    search_by_key(page, "key-3")
    page.shot("messages")
    page.click("#messages a.msg-link")
    body = page.wait_text("#msg-body", lambda t: t.startswith(HOSTILE))
    assert body == f"{HOSTILE}-3"
    assert driver.execute_script("return window.pwned === undefined")
    assert page.all("#view script") == [] and page.all("#view img") == []
    page.shot("message")


def test_a_groups_lag_goes_to_zero_once_a_consumer_ran(page, clients, emu):
    consumer = clients.python("py_push_consumer.py", "--topic", TOPIC, "--group", GROUP,
                              "--expect", str(COUNT))
    try:
        consumer.wait_for(lambda ev: len([e for e in ev if e["event"] == "msg"]) >= COUNT,
                          60, f"{COUNT} messages")
        page.open(f"groups/{GROUP}")
        page.wait_text("#group-lag", lambda t: t.strip() == "0", timeout=30)
        page.wait_for(lambda: sum(int(r[3]) for r in page.rows("#group-queues")) == COUNT,
                      "the committed offsets reach the messages sent")
        page.shot("group")
        page.open("groups")
        page.wait_text("#groups tbody", lambda t: GROUP in t)
        page.shot("groups")
    finally:
        consumer.stop()


def test_a_manual_clock_advanced_in_the_page_delivers_a_delayed_message(page, clients, emu):
    page.open("clock")
    page.click("#mode-manual")
    page.wait_text("#clock-mode", lambda t: t.strip() == "manual")
    delayed = send(clients, 1, "delayed", "--delay-level", "3")  # 10 s
    assert len(delayed.events("sent")) == 1, delayed.diagnostics()
    page.open("scheduled")
    page.wait_text("#scheduled tbody", lambda t: TOPIC in t)
    page.shot("scheduled")
    assert api(emu, f"/messages/search?topic={TOPIC}&key=delayed-0")["messages"] == []
    page.open("clock")
    page.type("#advance-seconds", "10")
    page.click("#advance")
    page.wait_text("#advance-result", lambda t: "fired" in t)
    page.shot("clock")
    search_by_key(page, "delayed-0")
    page.open("scheduled")
    page.wait_text("#scheduled", lambda t: TOPIC not in t)
    page.open("clock")
    page.click("#mode-follow")
    page.wait_text("#clock-mode", lambda t: t.strip() == "follow")


def test_a_fault_added_in_the_page_fails_the_next_send_and_the_log_shows_it(page, clients):
    page.open("faults")
    page.type("#fault-codes", "SEND")
    page.type("#fault-remark", "from the dashboard test")
    page.click("#fault-action option[value='error']")
    page.click("#fault-add")
    page.wait_text("#faults tbody", lambda t: "from the dashboard test" in t)
    page.shot("faults")
    failed = send(clients, 1, "faulted")
    assert failed.events("sent") == [] and len(failed.events("send_error")) == 1, \
        failed.diagnostics()
    page.click("#faults .remove-fault")
    page.wait_text("#faults", lambda t: "from the dashboard test" not in t)
    page.open("requests")
    page.type("#requests-filter", "SEND_MESSAGE")
    page.wait_text("#requests tbody", lambda t: "error" in t)
    page.shot("requests")
    after = send(clients, 1, "after")
    assert len(after.events("sent")) == 1, after.diagnostics()


def test_a_stopped_broker_shows_in_the_banner_until_it_is_back(page, emu):
    page.open("topics")
    post(emu, "/broker/stop")
    try:
        page.wait_text("#status", lambda t: "broker-a stopped" in t)
        page.shot("broker-stopped")
    finally:
        post(emu, "/broker/start")
    page.wait_text("#status", lambda t: "stopped" not in t and "connected" in t)
    page.open("topics")
    page.wait_text("#topics tbody", lambda t: TOPIC in t)
    page.console()  # the view's polls answered 404 (broker stopped) while it was down


VIEWS = ("cluster", "topics", f"topics/{TOPIC}", "groups", f"groups/{GROUP}", "producers",
         "messages", "dlq", "traces", "scheduled", "clock", "faults", "requests", "conformance",
         "recording")


@pytest.mark.parametrize(("width", "height", "mobile"), [(1280, 800, False), (390, 844, True)])
def test_every_view_has_a_heading_a_nav_link_and_fits_the_screen(page, width, height, mobile):
    page.size(width, height, mobile)
    try:
        for view in VIEWS:
            page.open(view)
            assert page.find("#view h1").text
            top = view.split("/")[0]
            assert page.all(f"nav a[href='#/{top}']"), f"no link to {top} in the nav"
            overflow = page.driver.execute_script(
                "return document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"#/{view} is {overflow}px wider than {width}px"
            page.shot(f"{width}x{height}-{view.replace('/', '-')}")
    finally:
        page.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_a_bad_search_says_what_is_wrong_in_one_line(page):
    page.open("messages?topic=NoSuchTopic")
    page.type("#msg-topic", "NoSuchTopic")
    page.click("#msg-search-btn")
    text = page.wait_text("#error", lambda t: "NoSuchTopic" in t)
    assert "\n" not in text.replace("dismiss", "").strip() and "Traceback" not in text
    page.shot("bad-search")
    page.console()  # the 404 the browser logged for the request is the expected answer
