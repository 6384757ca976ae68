"""RocketMQ 5's SubscriptionGroupConfig fields: consumeMessageOrderly, groupRetryPolicy
(exponential / customized backoff) and attributes, in subscriptionGroup.json and the
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body exactly as 5.x's fastjson writes them."""

from __future__ import annotations

import json

import pytest
from processor_support import FakeConn

from rocketmq_emu.broker.configs.subscription import (
    DEFAULT_CUSTOMIZED_NEXT_MS,
    CustomizedRetryPolicy,
    ExponentialRetryPolicy,
    GroupRetryPolicy,
    RetryBackoff,
    SubscriptionGroupConfig,
    SubscriptionGroupManager,
)
from rocketmq_emu.broker.processors.admin import AdminBrokerProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.topic_attributes import AttributeRequestError
from rocketmq_emu.client.admin_cli import build_parser
from rocketmq_emu.client.admin_cli_group import sub_group_body, sub_group_config
from rocketmq_emu.client.admin_output import UsageError

# What RocketMQ 5.3's JSON.toJSONString(subscriptionGroupConfig) writes (fastjson 1.x: fields in
# name order, null members left out, the enum by name): a default group, a FIFO group with an
# exponential backoff, and one with a customized table.
GOLDEN_DEFAULT = (
    '{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,'
    '"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,'
    '"groupName":"GID_default","groupRetryPolicy":{"type":"CUSTOMIZED"},"groupSysFlag":0,'
    '"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,'
    '"whichBrokerWhenConsumeSlowly":1}'
)
GOLDEN_FIFO_EXPONENTIAL = (
    '{"attributes":{"k":"v"},"brokerId":0,"consumeBroadcastEnable":false,"consumeEnable":true,'
    '"consumeFromMinEnable":false,"consumeMessageOrderly":true,"consumeTimeoutMinute":15,'
    '"groupName":"GID_fifo","groupRetryPolicy":{"exponentialRetryPolicy":{"initial":1000,'
    '"max":60000,"multiplier":3},"type":"EXPONENTIAL"},"groupSysFlag":0,'
    '"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":3,"retryQueueNums":1,'
    '"whichBrokerWhenConsumeSlowly":1}'
)
GOLDEN_CUSTOMIZED = (
    '{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,'
    '"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,'
    '"groupName":"GID_custom","groupRetryPolicy":{"customizedRetryPolicy":{"next":[1000,2000,'
    '4000]},"type":"CUSTOMIZED"},"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,'
    '"retryMaxTimes":2,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}'
)


def fastjson(doc: dict) -> str:
    """Compact, keys sorted: fastjson's output for these objects."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize("golden", [GOLDEN_DEFAULT, GOLDEN_FIFO_EXPONENTIAL, GOLDEN_CUSTOMIZED])
def test_golden_json_round_trips_to_the_same_text(golden):
    """A 5.x group parses and writes back to the very same JSON text."""
    cfg = SubscriptionGroupConfig.from_json(json.loads(golden))
    assert fastjson(cfg.to_json()) == golden


def test_golden_fields_become_attributes():
    """The 5.x fields are first-class; groupSysFlag and consumeTimeoutMinute stay in extra."""
    cfg = SubscriptionGroupConfig.from_json(json.loads(GOLDEN_FIFO_EXPONENTIAL))
    assert cfg.consume_message_orderly is True
    assert cfg.group_retry_policy == GroupRetryPolicy(
        "EXPONENTIAL", exponential_retry_policy=ExponentialRetryPolicy(1000, 60000, 3))
    assert cfg.attributes == {"k": "v"}
    assert cfg.extra == {"groupSysFlag": 0, "consumeTimeoutMinute": 15}
    assert cfg.retry_backoff() == RetryBackoff(4, exponential=(1000, 60000, 3))
    custom = SubscriptionGroupConfig.from_json(json.loads(GOLDEN_CUSTOMIZED))
    assert custom.retry_backoff() == RetryBackoff(3, customized_next_ms=(1000, 2000, 4000))


def test_defaults_and_a_4x_group():
    """A group without the 5.x fields (as 4.x writes it) gets 5.x's defaults and writes them."""
    cfg = SubscriptionGroupConfig.from_json({"groupName": "g", "retryMaxTimes": 5})
    assert cfg.consume_message_orderly is False
    assert cfg.group_retry_policy == GroupRetryPolicy()
    assert cfg.attributes == {} and cfg.extra == {}
    doc = cfg.to_json()
    assert doc["groupRetryPolicy"] == {"type": "CUSTOMIZED"}
    assert doc["consumeMessageOrderly"] is False and doc["attributes"] == {}
    assert cfg.retry_backoff() == RetryBackoff(6, customized_next_ms=DEFAULT_CUSTOMIZED_NEXT_MS)
    nulls = SubscriptionGroupConfig.from_json(
        {"groupName": "g", "groupRetryPolicy": None, "attributes": None,
         "consumeMessageOrderly": "true"})
    assert nulls.group_retry_policy == GroupRetryPolicy() and nulls.attributes == {}
    assert nulls.consume_message_orderly is True


def test_retry_policy_in_effect():
    """getRetryPolicy: the policy of the type, a default one when unset or the type unknown."""
    assert GroupRetryPolicy("EXPONENTIAL").retry_policy() == ExponentialRetryPolicy()
    assert GroupRetryPolicy().retry_policy() == CustomizedRetryPolicy()
    only_exp = GroupRetryPolicy(exponential_retry_policy=ExponentialRetryPolicy(1, 2, 3))
    assert only_exp.retry_policy() == CustomizedRetryPolicy()  # type CUSTOMIZED wins
    unknown = GroupRetryPolicy.from_json({"type": "LINEAR"})
    assert unknown.type is None and unknown.retry_policy() == CustomizedRetryPolicy()
    assert unknown.to_json() == {}
    assert GroupRetryPolicy.from_json({"type": 0}).type == "EXPONENTIAL"  # by ordinal
    assert GroupRetryPolicy.from_json({}).type == "CUSTOMIZED"
    assert GroupRetryPolicy.from_json({"type": "EXPONENTIAL", "x": 1}).to_json() == {
        "type": "EXPONENTIAL", "x": 1}


def test_next_delay_durations():
    """nextDelayDuration of both policies (index reconsumeTimes + 2; clamps)."""
    custom = CustomizedRetryPolicy()
    assert custom.next_delay_ms(-1) == custom.next_delay_ms(0) == 10_000
    assert custom.next_delay_ms(1) == 30_000
    assert custom.next_delay_ms(100) == 7_200_000
    assert CustomizedRetryPolicy([5, 6]).next_delay_ms(0) == 6
    exp = ExponentialRetryPolicy()
    assert [exp.next_delay_ms(n) for n in (-3, 0, 1, 2)] == [5000, 5000, 10000, 20000]
    assert exp.next_delay_ms(40) == 7_200_000


def test_java_str():
    """toString as mqadmin prints it."""
    policy = GroupRetryPolicy(customized_retry_policy=CustomizedRetryPolicy([1000, 5000]))
    assert policy.java_str() == (
        "GroupRetryPolicy{type=CUSTOMIZED, exponentialRetryPolicy=null, "
        "customizedRetryPolicy=CustomizedRetryPolicy{next=[1000, 5000]}}")
    assert SubscriptionGroupConfig("G").java_str() == (
        "SubscriptionGroupConfig{groupName=G, consumeEnable=true, consumeFromMinEnable=true, "
        "consumeBroadcastEnable=true, consumeMessageOrderly=false, retryQueueNums=1, "
        "retryMaxTimes=16, groupRetryPolicy=GroupRetryPolicy{type=CUSTOMIZED, "
        "exponentialRetryPolicy=null, customizedRetryPolicy=null}, brokerId=0, "
        "whichBrokerWhenConsumeSlowly=1, notifyConsumerIdsChangedEnable=true, groupSysFlag=0, "
        "consumeTimeoutMinute=15, subscriptionDataSet=null, attributes={}}")


def test_manager_persists_and_reloads_the_5x_fields(tmp_path):
    """subscriptionGroup.json keeps the 5.x fields across a reload."""
    path = str(tmp_path / "subscriptionGroup.json")
    m = SubscriptionGroupManager(path)
    cfg = SubscriptionGroupConfig.from_json(json.loads(GOLDEN_CUSTOMIZED))
    m.update_subscription_group_config(cfg)
    stored = json.loads((tmp_path / "subscriptionGroup.json").read_text())
    assert fastjson(stored["subscriptionGroupTable"]["GID_custom"]) == GOLDEN_CUSTOMIZED
    again = SubscriptionGroupManager(path)
    assert again.load()
    assert again.subscription_group_table["GID_custom"] == cfg


def test_attributes_are_a_modification(tmp_path):
    """5.x knows no group attribute: a modification is refused and nothing changes; an update
    without one keeps the attributes the group has (e.g. from its file)."""
    path = tmp_path / "subscriptionGroup.json"
    path.write_text(json.dumps({"subscriptionGroupTable": {
        "G": {"groupName": "G", "attributes": {"k": "v"}}}}))
    m = SubscriptionGroupManager(str(path))
    assert m.load()
    m.update_subscription_group_config(SubscriptionGroupConfig("G", retry_max_times=2))
    assert m.subscription_group_table["G"].attributes == {"k": "v"}
    with pytest.raises(AttributeRequestError, match="^unsupported key: x$"):
        m.update_subscription_group_config(SubscriptionGroupConfig("G", attributes={"+x": "1"}))
    with pytest.raises(AttributeRequestError, match="only add attribute is supported"):
        m.update_subscription_group_config(SubscriptionGroupConfig("N", attributes={"-x": ""}))
    assert m.subscription_group_table["G"].retry_max_times == 2
    assert "N" not in m.subscription_group_table


def test_processor_keeps_the_fields_and_refuses_attributes(ctx):
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP stores a 5.x body as sent; GET_ALL answers it."""
    admin = AdminBrokerProcessor(ctx, lambda: None)
    resp = admin.update_subscription_group(RemotingCommand.request(
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {},
        GOLDEN_FIFO_EXPONENTIAL.replace('{"k":"v"}', "{}").encode()), FakeConn())
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    cfg = ctx.subscription_groups.subscription_group_table["GID_fifo"]
    assert cfg.consume_message_orderly and cfg.retry_backoff().max_attempts == 4
    listed = json.loads(admin.get_all_subscription_group(RemotingCommand.request(
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, {}), FakeConn()).body)
    assert listed["subscriptionGroupTable"]["GID_fifo"]["groupRetryPolicy"] == {
        "exponentialRetryPolicy": {"initial": 1000, "max": 60000, "multiplier": 3},
        "type": "EXPONENTIAL"}
    refused = admin.update_subscription_group(RemotingCommand.request(
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {},
        b'{"groupName":"GID_fifo","attributes":{"+k":"v"}}'), FakeConn())
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert refused.remark == "java.lang.RuntimeException: unsupported key: k"


def parse(*argv: str):
    return build_parser().parse_args(["updateSubGroup", *argv])


def test_update_sub_group_body_is_what_mqadmin_sends():
    """-g G -o true -r 3: mqadmin 5.x's config (broadcast and from-min start false)."""
    cfg = sub_group_config(parse("-b", "h:1", "-g", " G ", "-o", "true", "-r", "3"))
    assert sub_group_body(cfg).decode() == (
        '{"attributes":{},"brokerId":0,"consumeBroadcastEnable":false,"consumeEnable":true,'
        '"consumeFromMinEnable":false,"consumeMessageOrderly":true,"consumeTimeoutMinute":15,'
        '"groupName":"G","groupRetryPolicy":{"type":"CUSTOMIZED"},"groupSysFlag":0,'
        '"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":3,"retryQueueNums":1,'
        '"whichBrokerWhenConsumeSlowly":1}')


def test_update_sub_group_every_option():
    """Every flag lands in its field; -p takes the policy JSON, --attributes the +k=v syntax."""
    cfg = sub_group_config(parse(
        "-c", "C", "-g", "G", "-s", "FALSE", "-m", "true", "-d", "yes", "-o", "TRUE",
        "-q", "2", "-r", "7", "-i", "1", "-w", "0", "-a", "false",
        "-p", '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000,10000]}}',
        "--attributes", "+a=b,-c"))
    assert (cfg.consume_enable, cfg.consume_from_min_enable, cfg.consume_broadcast_enable,
            cfg.consume_message_orderly, cfg.notify_consumer_ids_changed_enable) == (
        False, True, False, True, False)
    assert (cfg.retry_queue_nums, cfg.retry_max_times, cfg.broker_id,
            cfg.which_broker_when_consume_slowly) == (2, 7, 1, 0)
    assert cfg.retry_backoff() == RetryBackoff(8, customized_next_ms=(1000, 5000, 10000))
    assert cfg.attributes == {"+a": "b", "-c": ""}


@pytest.mark.parametrize("argv", [
    ("-b", "h:1"),
    ("-b", "h:1", "-g", "G", "-r", "x"),
    ("-b", "h:1", "-g", "G", "-p", "{bad"),
    ("-b", "h:1", "-g", "G", "-p", "[1]"),
    ("-b", "h:1", "-g", "G", "--attributes", "a=b"),
])
def test_update_sub_group_usage_errors(argv):
    """A missing -g, a non-number, bad policy JSON or attribute syntax is a usage error."""
    with pytest.raises(UsageError):
        sub_group_config(parse(*argv))
