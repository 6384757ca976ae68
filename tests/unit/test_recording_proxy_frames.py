"""What ``rmq-emu proxy`` changes in the frames it relays (broker/recording/proxy_frames.py):
route and cluster answers get the proxy's broker addresses, nothing else changes; frames are
cut out of a stream split anywhere."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.recording.format import FrameSplitter
from rocketmq_emu.broker.recording.plan import broker_addresses
from rocketmq_emu.broker.recording.proxy_frames import rewrite_addresses, rewritten
from rocketmq_emu.broker.remoting.codes import SERIALIZE_ROCKETMQ
from rocketmq_emu.broker.remoting.command import RemotingCommand

ROUTE = (b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.5:10911","1":"10.0.0.6:10911"},'
         b'"brokerName":"broker-a","cluster":"C"}],"filterServerTable":{"10.0.0.5:10911":[]},'
         b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4}]}')
PROXY = {"10.0.0.5:10911": "127.0.0.1:40001", "10.0.0.6:10911": "127.0.0.1:40011"}


def test_rewrite_keeps_every_byte_but_the_addresses():
    """A cluster answer with fastjson's unquoted keys: only the addresses change."""
    body = (b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.5:10911"},'
            b'"brokerName":"broker-a","cluster":"C"}},"clusterAddrTable":{"C":["broker-a"]}}')
    out = rewrite_addresses(body, PROXY.__getitem__)
    assert out == body.replace(b"10.0.0.5:10911", b"127.0.0.1:40001")


def test_a_route_answer_names_the_proxy_everywhere_its_broker_stood():
    out = rewrite_addresses(ROUTE, PROXY.__getitem__)
    assert sorted(a for _, _, a in broker_addresses(out)) == sorted(PROXY.values())
    assert b"10.0.0." not in out and b'"127.0.0.1:40001":[]' in out


def test_a_route_frame_is_rewritten_in_either_serialize_type():
    for serialize_type in (0, SERIALIZE_ROCKETMQ):
        answer = RemotingCommand(code=0, flag=1, opaque=7, body=ROUTE,
                                 serialize_type=serialize_type, ext_fields={"k": "v"})
        again = RemotingCommand.decode(rewritten(answer.encode(), PROXY.__getitem__))
        assert (again.code, again.flag, again.opaque, again.ext_fields) == (0, 1, 7, {"k": "v"})
        assert again.serialize_type == serialize_type
        assert again.body == rewrite_addresses(ROUTE, PROXY.__getitem__)


def test_an_error_answer_is_relayed_as_it_came():
    frame = RemotingCommand(code=17, flag=1, opaque=7, remark="No topic route info").encode()
    assert rewritten(frame, PROXY.__getitem__) == frame


@given(st.lists(st.binary(max_size=40), min_size=1, max_size=6), st.data())
def test_frames_come_out_whole_however_the_stream_is_cut(bodies, data):
    frames = [RemotingCommand(code=10, opaque=i, ext_fields={"n": str(i)}, body=b).encode()
              for i, b in enumerate(bodies)]
    stream = b"".join(frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    splitter, out, at = FrameSplitter(), [], 0
    for cut in [*cuts, len(stream)]:
        out += splitter.feed(stream[at:cut])
        at = max(at, cut)
    assert out == frames
