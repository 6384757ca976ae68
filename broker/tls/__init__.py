"""TLS on the remoting and gRPC ports, as RocketMQ 4.9.8's ``NettyRemotingServer`` serves it.

* :mod:`.config`: the ``tls.*`` keys (Java ``TlsSystemConfig``), pure;
* :mod:`.certs`: the test-mode self-signed certificate (Netty ``SelfSignedCertificate``);
* :mod:`.context`: the OpenSSL server context (Java ``TlsHelper.buildSslContext``);
* :mod:`.sniff`: the first-byte switch between plain and TLS (``NettyRemotingServer``'s
  ``HandshakeHandler``);
* :mod:`.cli`: ``rmq-emu tls-cert``, the certificate a running server presents, for a client to
  trust.

Only :mod:`.config` and :mod:`.sniff` are imported when a server starts with TLS configured;
pyOpenSSL and cryptography are imported when the context is built, never on a plain start.
"""
