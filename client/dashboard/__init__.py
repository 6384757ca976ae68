"""The dashboard: static pages (``static/``) served at ``/`` of the control API's port, over JSON
endpoints that read a running cluster's state the way the admin requests read it.

Nothing here is imported until the first request that needs it (:mod:`.routes`), so a control
API nobody browses costs nothing; nothing is cached between requests except the put/get
counter samples behind the cluster view's throughput chart, taken only when a page asks.
"""
