"""Links into the Items tab (space/tabs/explorer.py) and its pager's arithmetic, as plain functions:
the board's rows, the result and model pages (space/pages.py) and the tab itself share them.

A link opens the tab through the URL (`/?tab=items&submission=<id>`, the names the tab's URL state
reads: space/url_state.py, explorer.URL_FIELDS), so it is a plain href that works without script
and can be shared. Only a result scored here on a public split has items to show
(evaluator/release.py item_details_allowed): papers' rows and reference lines have none, and a
hidden split shows nothing per item, so none of those gets a link.
"""

from __future__ import annotations

import html
from urllib.parse import urlencode

from evaluator.registry import UnknownSuiteError, get_task
from evaluator.release import item_details_allowed
from leaderboard.result_record import KIND_COMPUTED, KIND_PARTIAL

ITEMS_TAB = "items"
RESULT_PARAM = "submission"  # the tab's result parameter (not `result`: the tab's own name for it)
PAGE_PARAM = "pg"  # not `page`: Gradio's page route reads that (space/page_param.py)
PAGE_ITEMS = 50
# row kinds scored here, item by item; `reported` (a paper's) and `reference` rows have no items
DETAILED_KINDS = frozenset({KIND_COMPUTED, KIND_PARTIAL})
LINK_TITLE = "Its answers item by item: inputs, gold, answer, right or wrong (the Items tab)"


def has_item_details(row_kind, suite, task) -> bool:
    """Whether a result of this kind on this suite and task has items the explorer may show."""
    if row_kind not in DETAILED_KINDS:
        return False
    try:
        return item_details_allowed(get_task(str(suite), str(task)))
    except UnknownSuiteError:
        return False


def items_href(submission_id: str, page: int = 1) -> str:
    """The link that opens the Items tab on this result (on `page`, the first by default)."""
    params = {"tab": ITEMS_TAB, RESULT_PARAM: submission_id}
    if page > 1:
        params[PAGE_PARAM] = str(page)
    return "/?" + urlencode(params)


def items_link(submission_id: str, text: str = "items", css: str = "pb-items-link") -> str:
    """An <a> to the result's items (escaped)."""
    return (
        f'<a class="{html.escape(css)}" href="{html.escape(items_href(submission_id))}" '
        f'title="{html.escape(LINK_TITLE)}">{html.escape(text)}</a>'
    )


# -- the pager: pages are numbered from 1; a result with no items (under the filters) has none ---
def page_count(total: int, per_page: int = PAGE_ITEMS) -> int:
    return max(0, -(-int(total) // per_page))


def page_label(page: int, pages: int) -> str:
    """The pager's label: page k of n; empty where there are no pages; a page past the last (a
    link's, or one typed) says so."""
    if not pages:
        return ""
    if page > pages:
        return f"page {int(page)}: past the last ({pages})"
    return f"page {int(page)} of {pages}"


def turned_page(page: int, pages: int, step: int) -> int:
    """The page `step` pages on (-1: previous, +1: next), kept within 1..pages: the ends hold, and
    from a page past the last, previous goes to the last."""
    return max(1, min(int(page or 1) + step, max(pages, 1)))


def can_turn(page: int, pages: int) -> tuple[bool, bool]:
    """(previous, next): whether each would show another page than this one."""
    page = int(page or 1)
    return (pages > 0 and page > 1, page < pages)
