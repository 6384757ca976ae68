"""RocketMQ 5's gRPC surface (``apache.rocketmq.v2``): the protocol's messages, loaded apart from
protobuf's default descriptor pool (``messages``). Importing this package imports nothing else."""
