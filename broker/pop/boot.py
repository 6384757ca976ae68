"""What a broker needs of POP at its start without loading POP: the revive topic, and whether the
store holds POP state to resume.

Java's ``TopicConfigManager`` creates the revive topic ``rmq_sys_REVIVE_LOG_<cluster>`` at boot,
so it is created at every start. The POP services themselves (revive service, order info, long
polling, processors: :mod:`rocketmq_emu.broker.pop.service`) are loaded at the first POP request,
or at the start when :func:`holds_pop_state`: Java's ``PopReviveService`` threads run from the
start and revive the check points left in the revive queues, and the order info of orderly POP
consumers (``consumerOrderInfo.json``) unblocks queues on a timer. A store that never saw a POP
has neither, so there is nothing to revive or unblock until the first POP request.
"""

from __future__ import annotations

import os
from typing import Any

from rocketmq_emu.broker.configs.base import config_file_path
from rocketmq_emu.broker.configs.topics import PERM_READ, PERM_WRITE, TopicConfig
from rocketmq_emu.broker.pop import names

#: ``BrokerPathConfigHelper.getConsumerOrderInfoPath``.
CONSUMER_ORDER_INFO_JSON = "consumerOrderInfo.json"


def ensure_revive_topic(topic_config: Any, cluster: str,
                        queue_num: int = names.REVIVE_QUEUE_NUM) -> str:
    """Create the cluster's revive topic unless it exists (``TopicConfigManager`` does at boot:
    ``reviveQueueNum`` read/write queues, perm RW) and mark it a system topic; its name."""
    topic = names.revive_topic(cluster)
    if topic_config.select_topic_config(topic) is None:
        topic_config.update_topic_config(TopicConfig(topic, read_queue_nums=queue_num,
                                                     write_queue_nums=queue_num,
                                                     perm=PERM_READ | PERM_WRITE))
    systems = getattr(topic_config, "system_topics", None)
    if systems is not None:
        systems.add(topic)
    return topic


def holds_pop_state(store: Any, cluster: str, revive_queue_num: int) -> bool:
    """True if the store has a record in a revive queue of ``cluster`` (check points or acks of
    an earlier POP) or an order info file (or its ``.bak``)."""
    topic = names.revive_topic(cluster)
    if any(store.get_max_offset_in_queue(topic, qid) > 0 for qid in range(revive_queue_num)):
        return True
    path = config_file_path(store.config.store_path_root_dir, CONSUMER_ORDER_INFO_JSON)
    return os.path.exists(path) or os.path.exists(path + ".bak")
