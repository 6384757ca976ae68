"""rocketmq_emu.broker.pop.names: POP's topic names, keys and constants, as apache/rocketmq
8fc57f1 (5.3.3+) spells them in PopAckConstants, KeyBuilder, MessageConst and BrokerConfig."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.pop import names

#: The characters TopicValidator allows in a topic or group name.
VALID = st.text(alphabet="%|abcXYZ019_-", min_size=1, max_size=16)
#: Anything, separators included.
ANY = st.text(alphabet="ab_+%@", min_size=0, max_size=12)


def test_revive_topic_per_cluster():
    """PopAckConstants.buildClusterReviveTopic: rmq_sys_REVIVE_LOG_{cluster}."""
    assert names.revive_topic("DefaultCluster") == "rmq_sys_REVIVE_LOG_DefaultCluster"
    assert names.is_revive_topic("rmq_sys_REVIVE_LOG_x") and not names.is_revive_topic(None)


def test_pop_ack_constants():
    """Tags, separator, revive group and intervals as PopAckConstants declares them."""
    assert (names.CK_TAG, names.ACK_TAG, names.BATCH_ACK_TAG, names.SPLIT) == (
        "ck", "ack", "bAck", "@")
    assert names.REVIVE_GROUP == "CID_RMQ_SYS_REVIVE_GROUP"
    assert (names.ACK_TIME_INTERVAL_MS, names.SECOND_MS, names.LOCK_TIME_MS,
            names.RETRY_QUEUE_NUM, names.LOCAL_HOST) == (1000, 1000, 5000, 1, "127.0.0.1")


def test_message_properties():
    """MessageConst's POP properties."""
    assert (names.PROPERTY_POP_CK, names.PROPERTY_POP_CK_OFFSET,
            names.PROPERTY_FIRST_POP_TIME, names.PROPERTY_TIMER_DELIVER_MS,
            names.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) == (
        "POP_CK", "POP_CK_OFFSET", "1ST_POP_TIME", "TIMER_DELIVER_MS", "UNIQ_KEY")


def test_broker_config_defaults():
    """BrokerConfig's revive defaults."""
    assert (names.REVIVE_QUEUE_NUM, names.REVIVE_INTERVAL_MS, names.REVIVE_MAX_SLOW_S,
            names.REVIVE_SCAN_TIME_MS, names.POP_CK_STAY_BUFFER_TIME_MS,
            names.POP_CK_STAY_BUFFER_TIME_OUT_MS, names.REVIVE_ACK_WAIT_MS) == (
        8, 1000, 3, 10000, 10000, 3000, 180000)
    assert names.ENABLE_RETRY_TOPIC_V2 is False and names.POP_FROM_RETRY_PROBABILITY == 20


def test_ck_rewrite_intervals():
    """PopReviveService.ckRewriteIntervalsInSeconds: 17 steps from 10 s to 2 h."""
    assert len(names.CK_REWRITE_INTERVALS_S) == 17
    assert names.CK_REWRITE_INTERVALS_S[0] == 10 and names.CK_REWRITE_INTERVALS_S[-1] == 7200


def test_retry_and_dlq_topics():
    """MixAll.getRetryTopic / getDLQTopic."""
    assert (names.retry_topic("g"), names.dlq_topic("g")) == ("%RETRY%g", "%DLQ%g")


def test_pop_retry_topic_forms():
    """KeyBuilderTest's names: v1 joins with '_', v2 with '+'; the default is v1."""
    assert names.pop_retry_topic_v1("test-topic", "test-group") == "%RETRY%test-group_test-topic"
    assert names.pop_retry_topic_v2("test-topic", "test-group") == "%RETRY%test-group+test-topic"
    assert names.pop_retry_topic("t", "g") == "%RETRY%g_t"
    assert names.pop_retry_topic("t", "g", enable_retry_v2=True) == "%RETRY%g+t"


def test_is_pop_retry_topic_v2():
    """A '+' after the %RETRY% prefix marks v2."""
    assert names.is_pop_retry_topic_v2("%RETRY%g+t")
    assert not names.is_pop_retry_topic_v2("%RETRY%g_t") and not names.is_pop_retry_topic_v2("g+t")


@given(ANY, ANY)
def test_parse_normal_topic_of_group_inverts_both_forms(topic, group):
    """parseNormalTopic(topic, cid) gives the topic back from v1 and v2, whatever they hold."""
    assert names.parse_normal_topic_of_group(names.pop_retry_topic_v2(topic, group), group) == topic
    assert names.parse_normal_topic_of_group(names.pop_retry_topic_v1(topic, group), group) == topic


def test_parse_normal_topic_of_group_leaves_other_topics():
    """A topic without the %RETRY% prefix is returned unchanged."""
    assert names.parse_normal_topic_of_group("TopicA", "g") == "TopicA"


def test_parse_normal_topic_of_group_too_short_raises():
    """%RETRY%{group} alone is shorter than the v1 prefix: Java throws, ValueError here."""
    with pytest.raises(ValueError):
        names.parse_normal_topic_of_group("%RETRY%g", "g")


@given(VALID, VALID)
def test_v2_parses_back_without_the_group(topic, group):
    """For valid names (no '+'), parseNormalTopic and parseGroup split a v2 topic back."""
    v2 = names.pop_retry_topic_v2(topic, group)
    assert (names.parse_normal_topic(v2), names.parse_group(v2)) == (topic, group)


@given(VALID, VALID)
def test_v1_cannot_be_split_without_the_group(topic, group):
    """A v1 topic is returned whole by parseNormalTopic; parseGroup gives group_topic."""
    v1 = names.pop_retry_topic_v1(topic, group)
    assert names.parse_normal_topic(v1) == v1
    assert names.parse_group(v1) == group + "_" + topic


def test_a_plus_in_the_group_defeats_the_one_argument_parse():
    """Three '+' parts: parseNormalTopic returns the name, parseGroup cuts only the prefix."""
    v2 = names.pop_retry_topic_v2("t", "a+b")
    assert names.parse_normal_topic(v2) == v2
    assert names.parse_group(v2) == "a+b+t"
    assert names.parse_normal_topic_of_group(v2, "a+b") == "t"


def test_java_split_drops_trailing_empty_parts():
    """'%RETRY%g+' splits to one part (Java drops trailing empties): not parsed as v2."""
    assert names.parse_normal_topic("%RETRY%g+") == "%RETRY%g+"
    assert names.parse_group("%RETRY%g++") == "g++"
    assert names.parse_normal_topic("%RETRY%+t") == "t" and names.parse_group("%RETRY%+t") == ""


def test_parse_group_too_short_raises():
    """Shorter than %RETRY%: Java's substring throws, ValueError here."""
    with pytest.raises(ValueError):
        names.parse_group("abc")


def test_keys():
    """Polling and lock keys join with '@'; the merge key concatenates with no separator."""
    assert names.polling_key("T", "G", 3) == names.lock_key("T", "G", 3) == "T@G@3"
    assert names.merge_key("T", "G", 3, 10, 99, None) == "TG31099null"


def test_unique_ids():
    """genCkUniqueId / genAckUniqueId / genBatchAckUniqueId, nulls written as Java writes them."""
    assert names.ck_unique_id("T", 0, 5, "G", 9, None) == "T@0@5@G@9@null@ck"
    assert names.ack_unique_id("T", 0, 6, "G", 9, "b") == "T@0@6@G@9@b@ack"
    assert names.batch_ack_unique_id("T", 0, [], "G", 9) == "T@0@[]@G@9@bAck"
