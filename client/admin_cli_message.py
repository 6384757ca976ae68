"""``rmq-emu admin`` message subcommands (mqadmin 4.9.8 ``tools/command/message``), merged
into :mod:`rocketmq_emu.client.admin_cli`.

=====================  =====================================================================
queryMsgById           -i msgId [-t topic]: by offset id (33); a UNIQ_KEY needs -t (12)
queryMsgByKey          -t topic -k key [-b begin ms] [-e end ms]: matching messages (12)
queryMsgByOffset       -t topic -b brokerName -i queueId -o offset: the message there (11)
printMsg               -t topic [-c charset] [-s tags] [-b begin] [-e end] [-d false]: every
                       message of the topic, ``MessageExt.toString`` a line (11)
sendMessage            -t topic -p body [-k keys] [-c tags] [-b brokerName -i queueId]:
                       send one message, print the SendResult (310)
=====================  =====================================================================
"""

from __future__ import annotations

import argparse
import codecs
import time
from collections.abc import Callable
from typing import Any

from rocketmq_emu.client import api
from rocketmq_emu.client.admin_output import Output, UsageError, format_ms, parse_timestamp
from rocketmq_emu.client.api import PullStatus
from rocketmq_emu.client.message import MessageExt, MessageQueue, MQClientError
from rocketmq_emu.client.rebalance import Subscription
from rocketmq_emu.client.route import subscribe_queues

#: ``MixAll.TOOLS_CONSUMER_GROUP``: the group mqadmin's pulls are made as.
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"


def _message_doc(m: MessageExt) -> dict[str, Any]:
    return {
        "OffsetID": m.offset_msg_id, "Topic": m.topic, "Tags": m.tags, "Keys": m.keys,
        "Queue ID": m.queue_id, "Queue Offset": m.queue_offset,
        "CommitLog Offset": m.commitlog_offset, "Reconsume Times": m.reconsume_times,
        "Born Timestamp": m.born_timestamp, "Store Timestamp": m.store_timestamp,
        "Born Host": f"{m.born_host[0]}:{m.born_host[1]}",
        "Store Host": f"{m.store_host[0]}:{m.store_host[1]}", "System Flag": m.sys_flag,
        "Properties": m.properties, "Message Body": m.body.decode("utf-8", errors="replace"),
    }


def print_msg(out: Output, m: MessageExt) -> None:
    """``QueryMsgByIdSubCommand.printMsg``: the message's fields, one ``%-20s`` label a line."""
    doc = _message_doc(m)
    for key in ("OffsetID", "Topic", "Tags", "Keys", "Queue ID", "Queue Offset",
                "CommitLog Offset", "Reconsume Times"):
        value = doc[key]
        out.text(f"{key + ':':<20} {('[' + ', '.join(value) + ']') if key == 'Keys' else value}")
    out.text(f"{'Born Timestamp:':<20} {format_ms(m.born_timestamp)}")
    out.text(f"{'Store Timestamp:':<20} {format_ms(m.store_timestamp)}")
    for key in ("Born Host", "Store Host", "System Flag", "Properties", "Message Body"):
        out.text(f"{key + ':':<20} {doc[key]}")


async def query_msg_by_id(admin: Any, args: argparse.Namespace, out: Output) -> None:
    if not args.msgId:
        raise UsageError("-i msgId is required")
    m = await admin.view_message(args.msgId.strip(), args.topic)
    print_msg(out, m)
    out.doc = _message_doc(m)


async def query_msg_by_key(admin: Any, args: argparse.Namespace, out: Output) -> None:
    if not args.topic or not args.msgKey:
        raise UsageError("-t topic and -k msgKey are required")
    begin = int(args.beginTimestamp or 0)
    end = int(args.endTimestamp) if args.endTimestamp else None
    msgs = await admin.query_by_key(args.topic, args.msgKey, 64, begin, end)
    rows = [(m.msg_id, m.queue_id, m.queue_offset) for m in msgs]
    out.table(("Message ID", "QID", "Offset"), rows)
    out.doc = [{"msgId": m.msg_id, "offsetMsgId": m.offset_msg_id, "queueId": m.queue_id,
                "queueOffset": m.queue_offset} for m in msgs]


def _required(value: str | None, flag: str) -> str:
    if not value or not value.strip():
        raise UsageError(f"{flag} is required")
    return value.strip()


def _java_int(value: str, flag: str) -> int:
    """``Integer.parseInt`` / ``Long.parseLong`` of an option (a usage error if not a number)."""
    try:
        return int(value.strip())
    except ValueError:
        raise UsageError(f"{flag}: not a number: {value!r}") from None


async def _pull(admin: Any, mq: MessageQueue, sub: Subscription, offset: int,
                max_nums: int) -> Any:
    """``DefaultMQPullConsumer.pull`` as the tools' ``TOOLS_CONSUMER`` group: no long poll,
    the subscription sent with the request."""
    if admin.instance.master_addr(mq.broker_name) is None:
        await admin.instance.update_route(mq.topic)
    return await api.pull(admin.instance, TOOLS_CONSUMER_GROUP, mq, sub, offset, max_nums,
                          suspend_ms=0, send_subscription=True, timeout=10.0)


async def query_msg_by_offset(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``QueryMsgByOffsetSubCommand``: pull one message at ``-o`` of queue ``-i`` on broker
    ``-b`` and print it like queryMsgById; nothing when there is no message there."""
    topic = _required(args.topic, "-t topic")
    broker = _required(args.brokerName, "-b brokerName")
    qid = _java_int(_required(args.queueId, "-i queueId"), "-i")
    offset = _java_int(_required(args.offset, "-o offset"), "-o")
    result = await _pull(admin, MessageQueue(topic, broker, qid), Subscription.build(topic, "*", 0),
                         offset, 1)
    if result.status is PullStatus.FOUND and result.messages:
        m = result.messages[0]
        print_msg(out, m)
        out.doc = _message_doc(m)
    else:
        out.doc = None


def java_message_text(m: MessageExt) -> str:
    """``MessageExt.toString`` (with ``Message.toString`` inside) as 4.9.8 prints it."""
    body = ", ".join(str(b - 256 if b > 127 else b) for b in m.body)  # Java bytes are signed
    props = ", ".join(f"{k}={v}" for k, v in m.properties.items())
    return (f"MessageExt [brokerName={m.broker_name}, queueId={m.queue_id}, "
            f"storeSize={m.store_size}, queueOffset={m.queue_offset}, sysFlag={m.sys_flag}, "
            f"bornTimestamp={m.born_timestamp}, bornHost=/{m.born_host[0]}:{m.born_host[1]}, "
            f"storeTimestamp={m.store_timestamp}, "
            f"storeHost=/{m.store_host[0]}:{m.store_host[1]}, msgId={m.offset_msg_id}, "
            f"commitLogOffset={m.commitlog_offset}, bodyCRC={m.body_crc}, "
            f"reconsumeTimes={m.reconsume_times}, "
            f"preparedTransactionOffset={m.prepared_transaction_offset}, "
            f"toString()=Message{{topic='{m.topic}', flag={m.flag}, properties={{{props}}}, "
            f"body=[{body}], transactionId='null'}}]")


async def print_messages(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``PrintMessageSubCommand``: every message of every readable queue of ``-t`` between
    ``-b`` and ``-e`` (default: the whole queue), 32 a pull, ``-s`` tag expression."""
    topic = _required(args.topic, "-t topic")
    charset = (args.charsetName or "UTF-8").strip()
    try:
        codecs.lookup(charset)
    except LookupError:
        raise UsageError(f"-c {charset}: unknown charset") from None
    sub = Subscription.build(topic, (args.subExpression or "*").strip(), 0)
    print_body = args.printBody is None or args.printBody.strip().lower() == "true"
    begin = parse_timestamp(args.beginTimestamp.strip()) if args.beginTimestamp else None
    end = parse_timestamp(args.endTimestamp.strip()) if args.endTimestamp else None
    route = await admin.instance.update_route(topic)
    if route is None:
        raise MQClientError(f"Can not find Message Queue for this topic, {topic}")
    docs = []
    for mq in sorted(subscribe_queues(topic, route)):
        mq_text = f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, " \
                  f"queueId={mq.queue_id}]"
        low = await api.min_offset(admin.instance, mq)
        high = await api.max_offset(admin.instance, mq)
        if begin is not None:
            low = await api.search_offset(admin.instance, mq, begin)
        if end is not None:
            high = await api.search_offset(admin.instance, mq, end)
        out.text(f"minOffset={low}, maxOffset={high}, {mq_text}")
        offset = low
        while offset < high:
            result = await _pull(admin, mq, sub, offset, 32)
            offset = result.next_begin_offset
            if result.status is PullStatus.FOUND:
                for m in result.messages:
                    body = m.body.decode(charset, errors="replace") if print_body \
                        else "NOT PRINT BODY"
                    out.text(f"MSGID: {m.msg_id} {java_message_text(m)} BODY: {body}")
                    docs.append({"msgId": m.msg_id, "offsetMsgId": m.offset_msg_id,
                                 "brokerName": mq.broker_name, "queueId": m.queue_id,
                                 "queueOffset": m.queue_offset, "tags": m.tags, "keys": m.keys,
                                 "body": body})
            elif result.status is PullStatus.NO_MATCHED_MSG:
                out.text(f"{mq_text} no matched msg. status={result.status.value}, "
                         f"offset={offset}")
            else:
                out.text(f"{mq_text} print msg finished. status={result.status.value}, "
                         f"offset={offset}")
                break
        out.text("--------------------------------------------------------")
    out.doc = docs


async def send_message(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``SendMessageCommand``: send one message (to queue ``-i`` of broker ``-b`` when both are
    given) from a producer group named after the current time, and print the SendResult."""
    from rocketmq_emu.client.message import Message
    from rocketmq_emu.client.producer import Producer

    topic = _required(args.topic, "-t topic")
    if args.body is None:
        raise UsageError("-p body is required")
    queue = None
    if args.qid is not None:
        if not args.broker:
            raise UsageError("Broker name must be set if the queue is chosen!")
        queue = MessageQueue(topic, args.broker.strip(), _java_int(args.qid, "-i"))
    msg = Message(topic, args.body.strip().encode("utf-8"),
                  tags=args.tags.strip() if args.tags else None,
                  keys=args.key.strip() if args.key else None)
    producer = Producer(str(int(time.time() * 1000)), admin.instance.namesrv_addrs,
                        instance=admin.instance)
    await producer.start()
    try:
        result = await producer.send(msg, queue=queue)
    finally:
        await producer.shutdown()
    mq = result.message_queue
    out.table(("Broker Name", "QID", "Send Result", "MsgId"),
              [(mq.broker_name, mq.queue_id, result.status.value, result.msg_id)])
    out.doc = {"brokerName": mq.broker_name, "queueId": mq.queue_id,
               "sendStatus": result.status.value, "msgId": result.msg_id,
               "offsetMsgId": result.offset_msg_id, "queueOffset": result.queue_offset}


Command = Callable[[Any, argparse.Namespace, Output], Any]

COMMANDS: dict[str, tuple[str, Command]] = {
    "queryMsgById": ("Query Message by Id", query_msg_by_id),
    "queryMsgByKey": ("Query Message by Key", query_msg_by_key),
    "queryMsgByOffset": ("Query Message by offset", query_msg_by_offset),
    "printMsg": ("Print Message Detail", print_messages),
    "sendMessage": ("Send a message", send_message),
}


def add_options(name: str, p: argparse.ArgumentParser) -> None:
    """The mqadmin flags of subcommand ``name``."""
    opt = p.add_argument
    if name in ("queryMsgById", "queryMsgByKey", "queryMsgByOffset", "printMsg",
                "sendMessage"):
        opt("-t", "--topic", help="topic name")
    if name == "queryMsgById":
        opt("-i", "--msgId", help="Message Id: an offset msgId, or a client-side id (UNIQ_KEY, "
            "as queryMsgByKey prints it) with -t")
    if name == "queryMsgByKey":
        opt("-k", "--msgKey")
        opt("-b", "--beginTimestamp")
        opt("-e", "--endTimestamp")
    if name == "queryMsgByOffset":
        opt("-b", "--brokerName", help="Broker Name")
        opt("-i", "--queueId", help="Queue Id")
        opt("-o", "--offset", help="Queue Offset")
    if name == "printMsg":
        opt("-c", "--charsetName", help="CharsetName(eg: UTF-8,GBK)")
        opt("-s", "--subExpression", help="Subscribe Expression(eg: TagA || TagB)")
        opt("-b", "--beginTimestamp",
            help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
        opt("-e", "--endTimestamp", help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
        opt("-d", "--printBody", help="print body")
    if name == "sendMessage":
        opt("-p", "--body", help="UTF-8 string format of the message body")
        opt("-k", "--key", help="Message keys")
        opt("-c", "--tags", help="Message tags")
        opt("-b", "--broker", help="Send message to target broker")
        opt("-i", "--qid", help="Send message to target queue")
        opt("-m", "--msgTraceEnable", help="Message Trace Enable, Default: false (accepted; "
            "this client writes no trace)")
