"""``rmq-emu admin`` subcommands an mqadmin 4.9.8 user types day to day (issue #25 defect 3):
their option letters and output shape, against a running name server + broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest_twisted
from issue7_support import create_topic, send_bodies, wait_for
from twisted.internet import reactor, threads

from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.client.admin import Admin
from rocketmq_emu.client.admin_cli import build_parser, execute
from rocketmq_emu.client.admin_common import invoke
from rocketmq_emu.client.message import Message
from rocketmq_emu.client.producer import Producer
from rocketmq_emu.client.push_consumer import PushConsumer


async def admin(namesrv, *argv: str) -> tuple[int, str]:
    """Run one admin command in-process (same reactor as the cluster)."""
    args = build_parser().parse_args([argv[0], "-n", namesrv.addr, *argv[1:]])
    return await execute(args, reactor)


async def _online_consumer(namesrv, broker, group: str, topic: str) -> PushConsumer:
    """A push consumer of ``group`` on ``topic`` that has consumed the topic's one message and
    whose retry topic the name server routes."""
    await create_topic(namesrv.addr, topic, 1)
    await send_bodies(namesrv.addr, topic, [b"m"])
    inbox: list = []
    consumer = PushConsumer(group, namesrv.addr, reactor=reactor,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            listener=lambda msgs, ctx: inbox.extend(msgs) or True)
    consumer.subscribe(topic, "*")
    await consumer.start()
    await wait_for(lambda: len(inbox) == 1, what="consumed")
    await broker.register_broker_all()
    return consumer


# --- consumer side -------------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_consumer_connection_prints_clients_subscription_and_settings(cluster):
    """consumerConnection -g: the client table, 'Below is subscription:', then ConsumeType,
    MessageModel and ConsumeFromWhere lines, as ConsumerConnectionSubCommand prints them."""
    namesrv, broker = cluster
    consumer = await _online_consumer(namesrv, broker, "cc-g", "CcT")
    try:
        status, text = await admin(namesrv, "consumerConnection", "-g", "cc-g")
        assert status == 0, text
        lines = text.splitlines()
        assert lines[0].split() == ["#ClientId", "#ClientAddr", "#Language", "#Version"]
        assert lines[1].split()[0] == consumer.instance.client_id
        assert lines[1].split()[3] == "V4_9_8"
        at = lines.index("Below is subscription:")
        assert lines[at + 1].split() == ["#Topic", "#SubExpression"]
        assert ["CcT", "*"] in [line.split() for line in lines[at + 2:]]
        assert lines[-3:] == ["ConsumeType: CONSUME_PASSIVELY", "MessageModel: CLUSTERING",
                              "ConsumeFromWhere: CONSUME_FROM_FIRST_OFFSET"]
        status, text = await admin(namesrv, "consumerConnection", "-g", "cc-g", "-b",
                                   broker.addr)
        assert status == 0 and consumer.instance.client_id in text
    finally:
        await consumer.shutdown()


@pytest_twisted.ensureDeferred
async def test_consumer_connection_of_an_offline_group_fails_in_one_line(cluster):
    """An offline group: status 1 and the Java tool's 'Not found the consumer group
    connection'."""
    namesrv, broker = cluster
    status, text = await admin(namesrv, "consumerConnection", "-g", "nobody", "-b", broker.addr)
    assert status == 1
    assert "Not found the consumer group connection" in text and len(text.splitlines()) == 1


@pytest_twisted.ensureDeferred
async def test_consumer_status_saves_each_clients_running_info(cluster, tmp_path, monkeypatch):
    """consumerStatus -g: one row per client naming the <now>/<clientId> file it wrote (the
    running info's formatString), then the subscription and rebalance verdict; -i prints one
    client's running info."""
    namesrv, broker = cluster
    monkeypatch.chdir(tmp_path)
    consumer = await _online_consumer(namesrv, broker, "cs-g", "CsT")
    client_id = consumer.instance.client_id
    try:
        status, text = await admin(namesrv, "consumerStatus", "-g", "cs-g")
        assert status == 0, text
        lines = text.splitlines()
        assert lines[0].split() == ["#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile"]
        index, row_client, version, path = lines[1].split()
        assert (index, row_client, version) == ("1", client_id, "V4_9_8")
        assert path.endswith(f"/{client_id}")
        saved = (tmp_path / path).read_text()
        assert saved.startswith("#Consumer Properties#\n")
        assert "#Consumer MQ Detail#" in saved and "ProcessQueueInfo [commitOffset=" in saved
        assert lines[-3:] == ["Same subscription in the same group of consumer", "",
                              "Rebalance OK"]
        status, text = await admin(namesrv, "consumerStatus", "-g", "cs-g", "-i", client_id)
        assert status == 0, text
        assert text.splitlines()[0] == "#Consumer Properties#"
        assert any(line.startswith("001 Topic: CsT") for line in text.splitlines())
    finally:
        await consumer.shutdown()


@pytest_twisted.ensureDeferred
async def test_producer_connection_numbers_the_groups_clients(cluster):
    """producerConnection -g -t: '0001  clientId  addr  language  version', no header."""
    namesrv, _broker = cluster
    await create_topic(namesrv.addr, "PcT", 1)
    producer = Producer("pc-g", namesrv.addr, reactor=reactor)
    await producer.start()
    try:
        await producer.send(Message("PcT", b"x"))
        await producer.instance.send_heartbeat_to_all_brokers()
        status, text = await admin(namesrv, "producerConnection", "-g", "pc-g", "-t", "PcT")
        assert status == 0, text
        fields = text.splitlines()[0].split()
        assert fields[0] == "0001" and fields[1] == producer.client_id
        assert fields[-1] == "V4_9_8"
    finally:
        await producer.shutdown()


@pytest_twisted.ensureDeferred
async def test_consumer_progress_without_g_lists_every_group(cluster):
    """consumerProgress with no -g: one row per group with a %RETRY% topic, online groups with
    their client count, version, type and model, offline ones OFFLINE with their diff."""
    namesrv, broker = cluster
    consumer = await _online_consumer(namesrv, broker, "cp-on", "CpOn")
    try:
        await create_topic(namesrv.addr, "CpOff", 1)
        await send_bodies(namesrv.addr, "CpOff", [b"a", b"b", b"c"])
        broker.store.consumer_offsets.commit_offset("t", "cp-off", "CpOff", 0, 1)
        broker.store.topic_config.create_topic_in_send_message_back_method("%RETRY%cp-off", 1, 6)
        await broker.register_broker_all()
        status, text = await admin(namesrv, "consumerProgress")
        assert status == 0, text
        lines = text.splitlines()
        assert lines[0].split() == ["#Group", "#Count", "#Version", "#Type", "#Model", "#TPS",
                                    "#Diff", "Total"]
        rows = {line.split()[0]: line.split() for line in lines[1:]}
        assert rows["cp-on"][1:5] == ["1", "V4_9_8", "PUSH", "CLUSTERING"]
        assert rows["cp-off"] == ["cp-off", "0", "OFFLINE", "0", "2"]
        status, doc = await admin(namesrv, "consumerProgress", "--json")
        assert {g["group"] for g in json.loads(doc)} >= {"cp-on", "cp-off"}
    finally:
        await consumer.shutdown()


@pytest_twisted.ensureDeferred
async def test_consumer_progress_shows_client_ip_only_with_s_true(cluster):
    """consumerProgress -g: no Client IP column unless -s true, as in mqadmin."""
    namesrv, broker = cluster
    consumer = await _online_consumer(namesrv, broker, "cpip-g", "CpIp")
    try:
        status, text = await admin(namesrv, "consumerProgress", "-g", "cpip-g")
        assert status == 0, text
        assert "#Client IP" not in text.splitlines()[0]
        status, text = await admin(namesrv, "consumerProgress", "-g", "cpip-g", "-s", "true")
        assert status == 0, text
        head = text.splitlines()[0]
        assert "#Client IP" in head
        row = next(line for line in text.splitlines() if line.startswith("CpIp "))
        assert "127.0.0.1" in row.split()
    finally:
        await consumer.shutdown()


@pytest_twisted.ensureDeferred
async def test_delete_sub_group_from_a_broker_with_its_offsets(cluster):
    """deleteSubGroup -g -b -r true: the group's config and offsets are gone."""
    namesrv, broker = cluster
    groups = broker.store.subscription_groups
    groups.find_subscription_group_config("dsg-g")
    broker.store.consumer_offsets.commit_offset("t", "dsg-g", "DsgT", 0, 3)
    status, text = await admin(namesrv, "deleteSubGroup", "-g", "dsg-g", "-b", broker.addr,
                               "-r", "true")
    assert status == 0, text
    assert text == f"delete subscription group [dsg-g] from broker [{broker.addr}] success."
    assert "dsg-g" not in groups.encode()["subscriptionGroupTable"]
    assert broker.store.consumer_offsets.query_offset("dsg-g", "DsgT", 0) == -1


@pytest_twisted.ensureDeferred
async def test_delete_sub_group_in_a_cluster_also_deletes_its_retry_and_dlq_topics(cluster):
    """deleteSubGroup -c: every master, then the %RETRY% and %DLQ% topics."""
    namesrv, broker = cluster
    broker.store.subscription_groups.find_subscription_group_config("dsc-g")
    broker.store.topic_config.create_topic_in_send_message_back_method("%RETRY%dsc-g", 1, 6)
    status, text = await admin(namesrv, "deleteSubGroup", "-g", "dsc-g", "-c", "DefaultCluster")
    assert status == 0, text
    assert text.splitlines()[:3] == [
        f"delete subscription group [dsc-g] from broker [{broker.addr}] in cluster "
        "[DefaultCluster] success.",
        "delete topic [%RETRY%dsc-g] from cluster [DefaultCluster] success.",
        "delete topic [%RETRY%dsc-g] from NameServer success."]
    assert broker.store.topic_config.select_topic_config("%RETRY%dsc-g") is None


@pytest_twisted.ensureDeferred
async def test_broker_honours_4_9_8s_remove_offset_flag(cluster):
    """DELETE_SUBSCRIPTIONGROUP as Apache mqadmin 4.9.8 sends it (removeOffset=true, no
    cleanOffset) removes the group's offsets."""
    namesrv, broker = cluster
    broker.store.consumer_offsets.commit_offset("t", "ro-g", "RoT", 0, 5)
    client = Admin(namesrv.addr, reactor=reactor)
    try:
        await invoke(client, broker.addr, RequestCode.DELETE_SUBSCRIPTIONGROUP,
                     {"groupName": "ro-g", "removeOffset": "true"})
    finally:
        await client.shutdown()
    assert broker.store.consumer_offsets.query_offset("ro-g", "RoT", 0) == -1


# --- messages ------------------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_query_msg_by_offset_prints_the_message_there(cluster):
    """queryMsgByOffset -t -b brokerName -i queueId -o offset prints it like queryMsgById."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "QoT", 1)
    await send_bodies(namesrv.addr, "QoT", [b"body-0", b"body-1"])
    status, text = await admin(namesrv, "queryMsgByOffset", "-t", "QoT", "-b",
                               broker.config.broker_name, "-i", "0", "-o", "1")
    assert status == 0, text
    assert "Queue Offset:        1" in text.splitlines()
    assert "Message Body:        body-1" in text.splitlines()


@pytest_twisted.ensureDeferred
async def test_print_msg_prints_every_message_of_each_queue(cluster):
    """printMsg -t: per queue its offsets line, one 'MSGID: id MessageExt [...] BODY: body'
    line per message, and the dashed rule; -d false hides the body."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "PmT", 1)
    sent = await send_bodies(namesrv.addr, "PmT", [b"body-0", b"body-1"])
    status, text = await admin(namesrv, "printMsg", "-t", "PmT")
    assert status == 0, text
    lines = text.splitlines()
    name = broker.config.broker_name
    assert lines[0] == (f"minOffset=0, maxOffset=2, MessageQueue [topic=PmT, brokerName={name}, "
                        "queueId=0]")
    assert lines[1].startswith(f"MSGID: {sent[0].msg_id} MessageExt [brokerName={name}, "
                               "queueId=0, storeSize=")
    assert lines[1].endswith("transactionId='null'}] BODY: body-0")
    assert lines[2].endswith(" BODY: body-1")
    assert lines[-1] == "--------------------------------------------------------"
    status, text = await admin(namesrv, "printMsg", "-t", "PmT", "-d", "false")
    assert text.splitlines()[1].endswith(" BODY: NOT PRINT BODY")


@pytest_twisted.ensureDeferred
async def test_send_message_prints_the_send_result(cluster):
    """sendMessage -t -p -k -c: a SendResult row; -b with -i picks the queue; -i alone is
    refused as mqadmin refuses it."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "SmT", 2)
    status, text = await admin(namesrv, "sendMessage", "-t", "SmT", "-p", "hello", "-k",
                               "sm-key", "-c", "TagA")
    assert status == 0, text
    head, row = text.splitlines()
    assert head.split() == ["#Broker", "Name", "#QID", "#Send", "Result", "#MsgId"]
    assert row.split()[0] == broker.config.broker_name and row.split()[2] == "SEND_OK"
    status, text = await admin(namesrv, "sendMessage", "-t", "SmT", "-p", "q1", "-b",
                               broker.config.broker_name, "-i", "1", "--json")
    assert status == 0, text
    assert json.loads(text)["queueId"] == 1
    status, text = await admin(namesrv, "sendMessage", "-t", "SmT", "-p", "x", "-i", "1")
    assert status == 2 and "Broker name must be set if the queue is chosen!" in text


# --- broker config and write permission ---------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_get_broker_config_prints_a_banner_then_key_equals_value(cluster):
    """getBrokerConfig -b: '============addr============' then '%-50s=  %s' lines; -c names
    the master in its banner."""
    namesrv, broker = cluster
    status, text = await admin(namesrv, "getBrokerConfig", "-b", broker.addr)
    assert status == 0, text
    lines = text.splitlines()
    assert lines[0] == f"============{broker.addr}============"
    assert f"{'brokerName':<50}=  {broker.config.broker_name}" in lines
    status, text = await admin(namesrv, "getBrokerConfig", "-c", "DefaultCluster")
    assert text.splitlines()[0] == f"============Master: {broker.addr}============"


@pytest_twisted.ensureDeferred
async def test_update_broker_config_changes_the_running_broker(cluster):
    """updateBrokerConfig -c -k -v: 'update broker config success, addr' and the new value."""
    namesrv, broker = cluster
    status, text = await admin(namesrv, "updateBrokerConfig", "-c", "DefaultCluster", "-k",
                               "brokerPermission", "-v", "4")
    assert status == 0, text
    assert text == f"update broker config success, {broker.addr}"
    assert broker.config.broker_permission == 4
    status, text = await admin(namesrv, "getBrokerConfig", "-b", broker.addr)
    assert f"{'brokerPermission':<50}=  4" in text.splitlines()


@pytest_twisted.ensureDeferred
async def test_wipe_then_add_write_perm_in_every_name_server(cluster):
    """wipeWritePerm -b brokerName makes the broker's topics read-only in the name server;
    addWritePerm gives the write permission back; each prints OK with the topic count."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "WpT", 1)
    name = broker.config.broker_name
    status, text = await admin(namesrv, "wipeWritePerm", "-b", name)
    assert status == 0, text
    prefix = f"wipe write perm of broker[{name}] in name server[{namesrv.addr}] OK, "
    assert text.startswith(prefix) and int(text[len(prefix):]) >= 1
    status, doc = await admin(namesrv, "topicRoute", "-t", "WpT", "--json")
    assert json.loads(doc)["queueDatas"][0]["perm"] == 4
    status, text = await admin(namesrv, "addWritePerm", "-b", name)
    assert status == 0, text
    assert text.startswith(f"add write perm of broker[{name}] in name server[{namesrv.addr}] OK, ")
    status, doc = await admin(namesrv, "topicRoute", "-t", "WpT", "--json")
    assert json.loads(doc)["queueDatas"][0]["perm"] == 6


# --- a closed pipe ----------------------------------------------------------------------------
def _run_into_closed_pipe(argv: list[str]) -> subprocess.CompletedProcess:
    """Run ``python -m rocketmq_emu.broker.cli argv`` with stdout a pipe whose read end is
    already closed: every write fails with EPIPE, deterministically."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "rocketmq_emu.broker.cli", *argv],
                              stdout=write_end, stderr=subprocess.PIPE, timeout=60,
                              env=dict(os.environ), check=False)
    finally:
        os.close(write_end)


@pytest_twisted.ensureDeferred
async def test_admin_output_into_a_closed_pipe_ends_quietly(cluster):
    """``rmq-emu admin topicStatus ... | head -1`` with the reader gone: status 0 and nothing on
    stderr (mqadmin's PrintStream swallows the error), no BrokenPipeError traceback."""
    namesrv, _broker = cluster
    await create_topic(namesrv.addr, "PipeT", 8)
    proc = await threads.deferToThread(
        _run_into_closed_pipe, ["admin", "topicStatus", "-n", namesrv.addr, "-t", "PipeT"])
    assert proc.stderr.decode() == ""
    assert proc.returncode == 0

