"""RocketMQ 5's gRPC surface (``apache.rocketmq.v2``): the protocol's messages, loaded apart from
protobuf's default descriptor pool (``messages``). Importing this package imports nothing else."""

#: ``ProxyConfig.grpcServerPort``: where the 5.x proxy (and ``rmq-emu up``) serves gRPC.
DEFAULT_GRPC_PORT = 8081
