"""The status line above the tabs shows worker names as typed (`host-pid-xxxx`, or an operator's
--name), inert but readable once Markdown renders them."""

from __future__ import annotations

import html
from datetime import datetime, timezone

from markdown_it import MarkdownIt

from space.tabs.service_status import worker_line


def test_worker_names_render_as_typed_and_stay_inert():
    now = datetime.now(timezone.utc).replace(tzinfo=None).isoformat()
    for name in ("vm-14336-a946", "gpu-box_1.eu", "<img src=x onerror=alert(1)>"):
        line = worker_line(
            {
                "name": name,
                "queues": ["personaboard", "personaboard:cpu"],
                "state": "idle",
                "last_heartbeat": now,
                "current_submission": None,
            }
        )
        rendered = MarkdownIt().render(line)
        assert "<img" not in rendered and "<code>" not in rendered, rendered
        text = rendered.removeprefix("<p><strong>").replace("</strong>", "", 1)
        assert html.unescape(text).startswith(f"{name} (web node, cpu): idle"), (
            rendered
        )  # no &#45; shown
