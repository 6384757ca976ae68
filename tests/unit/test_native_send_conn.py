"""The C send path and the connection's attributes: conn.language / conn.version."""

from __future__ import annotations

import pytest
from test_native_send import Pair, needs_native
from test_send_fused import BASE, json_frame, plain_frame

pytestmark = needs_native


@pytest.mark.parametrize("langs", [
    [("JAVA", 409), ("CPP", 409), ("JAVA", 409)],
    [("JAVA", 409), ("JAVA", 410), ("JAVA", 410)],
    [("GO", 1), ("GO", 1), ("GO", 1)],
])
def test_language_and_version_follow_the_frames_of_one_read(tmp_path, langs):
    """conn.language / conn.version end as the last frame of a read set them, whether the
    frames before it carried the same values or not (C sets them only when they change)."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))
    seen = []

    def spy(b):
        real = b.ctx.store.put_message

        def put(record):
            seen.append((b.proto.language, b.proto.version))
            return real(record)
        b.ctx.store.put_message = put
    pair.each(spy)
    data = b"".join(json_frame(dict(BASE, e="0"), opaque=10 + n, language=lang, version=ver)
                    for n, (lang, ver) in enumerate(langs))
    pair.feed(data)
    c, py = pair.outcomes()
    assert c == py
    assert seen == langs * 2  # each put saw its own frame's values, on both paths
