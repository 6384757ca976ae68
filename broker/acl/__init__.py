"""ACL 1.0 of RocketMQ 4.9.8 (the ``acl`` module's plain validator): ``plain_acl.yml`` accounts
and white lists (:mod:`.config`, :mod:`.addresses`), request signatures (:mod:`.signer`) and the
check of each request (:mod:`.validator`)."""

#: System property ``rocketmq.acl.plain.file``'s default (``PlainPermissionManager``), relative to
#: ROCKETMQ_HOME. Here, light as the package is, so the config and the gRPC switch can name it
#: without importing the YAML loader.
DEFAULT_PLAIN_FILE = "conf/plain_acl.yml"
