"""An Overview link naming what the server does not have (a suite, task, model type or size it
does not offer, a version that does not exist) says so above the table, naming each parameter and
its value (escaped), as the Leaderboard tab's link note does; a link naming nothing wrong says
nothing. Real stores (a results dataset in a folder), no browser."""

from __future__ import annotations

from unit.test_overview import default_record
from unit.test_tab_handlers import Services

from space.choices import ALL
from space.tabs import overview


def note_of(services, params: dict[str, str]) -> str:
    return overview.link_note(services, params, overview.link_controls(params))


def test_a_link_naming_what_the_server_lacks_says_so(tmp_path):
    services = Services(tmp_path)
    first = services.results.publish(default_record("ov-n1", "Alpha 7B", 0.8))
    assert note_of(services, {}) == ""
    good = {"suite": "prefeval", "task": "mcq", "type": "generative", "revision": first[:12]}
    assert note_of(services, good) == ""

    bad = note_of(services, {"suite": "nosuch", "revision": "deadbeef"})
    assert 'id="overview-link-notice"' in bad and 'role="status"' in bad
    assert "<code>suite=nosuch</code>" in bad and f"showing <code>{ALL}</code>" in bad
    assert "<code>revision=deadbeef</code>: no such revision here" in bad

    wrong = note_of(services, {"suite": "prefeval", "task": "mcq_nope", "size": "huge"})
    assert "task=mcq_nope" in wrong and "size=huge" in wrong and "suite=" not in wrong

    hostile = note_of(services, {"type": "<img src=x onerror=alert(1)>"})
    assert "<img" not in hostile and "type=&lt;img src=x onerror=alert(1)&gt;" in hostile
