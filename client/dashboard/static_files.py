"""The dashboard's page: ``static/`` in this package (plain HTML, CSS and JavaScript in a few
classic scripts, no build step), served at ``/`` (to a browser) and ``/dashboard/<file>``.

The page holds no data, so it is served without the control API's bearer token; every JSON
endpoint it calls still requires one where the API does (the page asks for it once). A strict
Content-Security-Policy keeps the page to its own scripts: even a message body that slipped
into the DOM as markup could not run.
"""

from __future__ import annotations

from importlib import resources

#: File name -> content type of what may be served (nothing else under static/ is).
FILES = {
    "index.html": "text/html; charset=utf-8",
    "core.js": "text/javascript; charset=utf-8",
    "views-broker.js": "text/javascript; charset=utf-8",
    "views-messages.js": "text/javascript; charset=utf-8",
    "views-emulator.js": "text/javascript; charset=utf-8",
    "main.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}

#: The page loads its own script and style only and talks to its own origin.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def read(name: str) -> bytes | None:
    """The bytes of static file ``name``, None if it is not one the dashboard serves."""
    if name not in FILES:
        return None
    return resources.files("rocketmq_emu.client.dashboard").joinpath("static", name).read_bytes()


def serve(request: object, name: str) -> bytes | None:
    """Answer ``request`` with static file ``name`` (headers set), None if there is no such file."""
    data = read(name)
    if data is None:
        return None
    request.setResponseCode(200)  # type: ignore[attr-defined]
    for header, value in ((b"content-type", FILES[name].encode()),
                          (b"cache-control", b"no-cache"),
                          (b"x-content-type-options", b"nosniff"),
                          (b"referrer-policy", b"no-referrer"),
                          (b"content-security-policy", CSP.encode())):
        request.setHeader(header, value)  # type: ignore[attr-defined]
    return data
