"""The page's URL holds the view of the tab being looked at, so a reload or a shared link opens it.

One query string per tab: `?tab=overview&suite=...` (the Leaderboard, the first tab, has no `tab`
parameter; `?status=<id>`, the status line's and the queue's links, opens the Submission status
tab). Each tab writes only its own view (`url_writer_js`, run after its redraws), and reads only a
link to itself on load (`tab_params`), so two tabs may use the same parameter names.

In the browser, `window.pbUrl` keeps every tab's view; the URL shows the open tab's, and a tab
switch (`tab_switch_js`) puts that tab's view into the URL. history.replaceState: no history entry
per click. Header-click sorting (`sort=column:desc`) is kept in the view beside the filters and is
re-applied after each redraw (`pbUrl.applySort`, the sort handler a table registers).
"""

from __future__ import annotations

import json
from typing import Sequence

TAB_PARAM = "tab"
FIRST_TAB = "leaderboard"
STATUS_TAB, STATUS_PARAM = "status", "status"
KEPT_PARAMS = ("sort",)  # written by header clicks, not by the tab's controls: kept across redraws

# Defines window.pbUrl once per page (every snippet starts with it: whichever runs first defines it).
PRELUDE = """
window.pbUrl = window.pbUrl || (() => {
  const FIRST = %(first)s, TAB = %(tab)s, KEPT = %(kept)s;
  const tabOf = (query) => {
    const p = new URLSearchParams(query);
    return p.get(TAB) || (p.get(%(status_param)s) ? %(status)s : FIRST);
  };
  let shown = tabOf(location.search);
  const views = {[shown]: new URLSearchParams(location.search)}, sorters = {};
  const view = (tab) => views[tab] || (views[tab] = new URLSearchParams(tab === FIRST ? '' : TAB + '=' + tab));
  const put = (tab) => {
    if (tab === shown) history.replaceState(history.state, '', '?' + view(tab).toString());
  };
  const text = (value) => Array.isArray(value) ? (value.join(',') || 'none') : value;
  return {
    shown: () => shown,
    get: (tab, key) => view(tab).get(key),
    write(tab, entries) {
      const old = view(tab), fresh = new URLSearchParams();
      if (tab !== FIRST) fresh.set(TAB, tab);
      for (const [key, value, fallback] of entries) {
        const v = value === null || value === undefined ? '' : text(value);
        if (v !== '' && v !== fallback) fresh.set(key, v);
      }
      for (const key of KEPT) if (old.has(key)) fresh.set(key, old.get(key));
      views[tab] = fresh;
      put(tab);
    },
    set(tab, key, value) {
      const p = view(tab);
      if (value === null || value === undefined || value === '') p.delete(key); else p.set(key, value);
      put(tab);
    },
    show(tab) { view(tab); shown = tab; put(tab); },
    onSort(tab, apply) { sorters[tab] = apply; },
    applySort(tab) { if (sorters[tab]) sorters[tab](view(tab).get('sort')); },
  };
})();
""" % {
    "first": json.dumps(FIRST_TAB),
    "tab": json.dumps(TAB_PARAM),
    "kept": json.dumps(list(KEPT_PARAMS)),
    "status_param": json.dumps(STATUS_PARAM),
    "status": json.dumps(STATUS_TAB),
}


def url_tab(params: dict[str, str]) -> str:
    """The tab a link opens (the same rule as the browser's pbUrl)."""
    return params.get(TAB_PARAM) or (STATUS_TAB if params.get(STATUS_PARAM) else FIRST_TAB)


def query_params(request) -> dict[str, str]:
    return dict(request.query_params) if request is not None else {}


def tab_params(request, tab: str) -> dict[str, str]:
    """The link's parameters when it opens `tab`, else none (another tab's view is not this one's)."""
    params = query_params(request)
    return params if url_tab(params) == tab else {}


def ignored_params(
    params: dict[str, str], shown: dict[str, str | None], exists=None
) -> list[tuple[str, str, str | None]]:
    """The link's parameters the view could not take: (name, value given, value shown instead),
    for each of `shown`'s names the link gives with another value than the view shows (a suite,
    task, setting or tier the server does not have falls back to a default), and `revision` when
    `exists` (a function of the value) says no such version exists."""
    found: list[tuple[str, str, str | None]] = []
    for name, value in shown.items():
        given = params.get(name)
        if given and given != value:
            found.append((name, given, value))
    revision = params.get("revision")
    if revision and exists is not None and not exists(revision):
        found.append(("revision", revision, None))
    return found


def link_notice(ignored: Sequence[tuple[str, str, str | None]], elem_id: str) -> str:
    """A visible note above a view opened from a link naming what the view does not have: each
    parameter, its value and what is shown instead (a link would otherwise open the default view
    without a word). Empty for a link that names nothing wrong."""
    if not ignored:
        return ""
    import html

    items = "".join(
        f"<li><code>{html.escape(name)}={html.escape(value[:100])}</code>: "
        + (
            f"no such {html.escape(name)} here; showing <code>{html.escape(shown)}</code>"
            if shown
            else f"no such {html.escape(name)} here"
        )
        + "</li>"
        for name, value, shown in ignored
    )
    return (
        f'<div class="pb-link-notice" id="{html.escape(elem_id)}" role="status" '
        'style="border:1px solid #d97706;border-radius:6px;padding:6px 10px;margin:4px 0">'
        f"<strong>This link names what the board does not have:</strong><ul>{items}</ul></div>"
    )


def url_writer_js(tab: str, fields: Sequence[tuple[str, str | int | None]]) -> str:
    """A js function for `.then(None, inputs, None, js=...)`: the inputs' values (one per field,
    in order) become `tab`'s view; a value equal to its field's default is left out, a list is
    written comma-joined ("none" when empty). Then the tab's header sort is re-applied."""
    names = [f"v{i}" for i in range(len(fields))]
    entries = ", ".join(
        f"[{json.dumps(key)}, {name}, {json.dumps(default)}]"
        for (key, default), name in zip(fields, names)
    )
    return (
        f"({', '.join(names)}) => {{{PRELUDE}"
        f"pbUrl.write({json.dumps(tab)}, [{entries}]);"
        f"setTimeout(() => pbUrl.applySort({json.dumps(tab)}), 50); return []; }}"
    )


def tab_switch_js() -> str:
    """A js function of the opened tab's id: the URL shows that tab's view."""
    return f"(tab) => {{{PRELUDE} if (tab) pbUrl.show(tab); return []; }}"
