"""ACL 1.0 through the harness and the project's own client: ``@pytest.mark.rocketmq(acl=...,
credentials=...)`` starts a cluster with ``aclEnable=true``; clients given the right
credentials sign (AclClientRPCHook) and send and consume, wrong or missing ones are refused."""

from __future__ import annotations

import pytest

from rocketmq_emu.client.message import Message
from rocketmq_emu.client.testing import unique

AK, SK = "RocketMQ", "12345678"


def acl_spec(topic: str, perm: str = "PUB|SUB") -> dict:
    return {"accounts": [{
        "accessKey": AK, "secretKey": SK, "admin": True,
        "defaultTopicPerm": "DENY", "defaultGroupPerm": "SUB",
        "topicPerms": [f"{topic}=PUB|SUB", f"{topic}_ro={perm}"],
    }]}


TOPIC = unique("AclT")


@pytest.mark.rocketmq(acl=acl_spec(TOPIC, "SUB"), credentials=(AK, SK))
def test_signed_clients_send_and_consume(rocketmq):
    """Producer and push consumer with the right credentials: sent and received."""
    rocketmq.create_topic(TOPIC)
    collector = rocketmq.collector(TOPIC)
    result = rocketmq.producer().send(Message(TOPIC, b"signed"))
    assert result.status.name == "SEND_OK"
    assert [m.body for m in collector.wait_for(1, timeout=20)] == [b"signed"]


@pytest.mark.rocketmq(acl=acl_spec(TOPIC, "SUB"), credentials=(AK, SK))
def test_wrong_or_missing_credentials_and_no_pub_are_refused(rocketmq):
    """A wrong secret, no credentials, a topic without PUB: the send fails with the broker's
    AclException remark; the broker keeps serving the right credentials."""
    rocketmq.create_topic(TOPIC)
    rocketmq.create_topic(f"{TOPIC}_ro")
    cases = [
        ({"credentials": (AK, "wrong-secret")}, TOPIC, "Check signature failed"),
        ({"credentials": None}, TOPIC, "No accessKey is configured"),
        ({}, f"{TOPIC}_ro", "No default permission for"),
    ]
    for kw, topic, words in cases:
        producer = rocketmq.producer(retry_times=0, **kw)
        with pytest.raises(Exception, match=words):
            producer.send(Message(topic, b"refused"))
    assert rocketmq.producer().send(Message(TOPIC, b"ok")).status.name == "SEND_OK"


@pytest.mark.rocketmq(acl=acl_spec(TOPIC), credentials=(AK, SK), grpc_port=None)
def test_update_acl_is_picked_up(rocketmq):
    """Rewriting plain_acl.yml (EmbeddedCluster.update_acl) changes what is allowed; the home
    is removed with the cluster."""
    rocketmq.create_topic(TOPIC)
    producer = rocketmq.producer(retry_times=0)
    assert producer.send(Message(TOPIC, b"before")).status.name == "SEND_OK"
    spec = acl_spec(TOPIC)
    spec["accounts"][0]["topicPerms"] = [f"{TOPIC}=SUB"]
    rocketmq.update_acl(spec)
    with pytest.raises(Exception, match="No default permission for"):
        producer.send(Message(TOPIC, b"after"))
    assert rocketmq.acl_home.path.is_file()


@pytest.mark.rocketmq(acl=acl_spec(TOPIC), credentials=(AK, SK), grpc_port=None)
def test_name_server_checks_no_signature(rocketmq):
    """As 4.9.8's name server (no RPCHook): a wrong secret still gets routes and cluster info,
    while the broker refuses the same credentials."""
    rocketmq.create_topic(TOPIC)
    admin = rocketmq.admin(credentials=(AK, "wrong-secret"))
    assert admin.route(TOPIC).broker_datas
    assert rocketmq.broker_name in str(admin.cluster_info())
    with pytest.raises(Exception, match="Check signature failed"):
        rocketmq.producer(retry_times=0, credentials=(AK, "wrong-secret")).send(
            Message(TOPIC, b"refused"))
