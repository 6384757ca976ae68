"""ACL 1.0 of RocketMQ 4.9.8 (the ``acl`` module's plain validator): ``plain_acl.yml`` accounts
and white lists (:mod:`.config`, :mod:`.addresses`), request signatures (:mod:`.signer`) and the
check of each request (:mod:`.validator`)."""
