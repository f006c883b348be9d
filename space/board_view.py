"""The ranked board as an HTML table: sections for verified, partial and papers' rows, a rank column,
per-cell intervals and counts, links to model and result pages; sorted in the browser by header
clicks (SORT_JS), within each section so kinds never mix.

Every piece of text from a submitter or a record is escaped here (html.escape) before it is shown.
"""

from __future__ import annotations

import html
import json
import math
from urllib.parse import quote

import pandas as pd

from evaluator.metrics import known_metrics
from leaderboard.columns import (
    ABOVE_REFERENCE,
    DUPLICATE_OF,
    PARSE_WARNING,
    RANK,
    RANK_AMONG,
    RANKED_ON,
    SIZE,
    chooser_entries,
    default_chooser,
    registry,
)
from leaderboard.result_record import KIND_COMPUTED, KIND_PARTIAL
from leaderboard.table import TOTAL
from space.display import (
    MIN_CELL_ITEMS,
    ROW_KINDS,
    SECTION_TITLES,
    UNRANKED_COMPUTED_TITLE,
    column_labels,
    format_interval,
    format_value,
    metric_label,
)
from space.item_links import LINK_TITLE, has_item_details, items_href
from space.labels import distinctions
from space.url_state import FIRST_TAB, PRELUDE

# Columns a reader can switch on and off (the column chooser), and those on by default: from the
# column registry (leaderboard/columns.yaml). Rank, Model and the ranking score always stay.
OPTIONAL_COLUMNS = chooser_entries()
DEFAULT_COLUMNS = default_chooser()
# The chooser entries that show one registry column of the same name, in the registry's order
PLAIN_CHOOSER_COLUMNS = [c.name for c in registry() if c.chooser == c.name]

STYLE = """<style>
.pb-board-wrap{--pb-muted:#5b6472;--pb-partial-bg:#fffbeb;--pb-reported-bg:#f9fafb;--pb-below:#b91c1c;--pb-warn:#92400e;--pb-link:#4338ca}
.dark .pb-board-wrap{--pb-muted:#a7b0bd;--pb-partial-bg:#1c180c;--pb-reported-bg:#161b26;--pb-below:#fca5a5;--pb-warn:#fbbf24;--pb-link:#a5b4fc}
.pb-board-wrap{overflow-x:auto;max-height:70vh;overflow-y:auto;border:1px solid var(--border-color-primary,#ddd);border-radius:6px}
table.pb-board{border-collapse:separate;border-spacing:0;font-size:14px;width:max-content;min-width:100%}
table.pb-board th,table.pb-board td{padding:4px 8px;border-bottom:1px solid var(--border-color-primary,#eee);white-space:nowrap;text-align:right;background:var(--background-fill-primary,#fff)}
table.pb-board thead th{position:sticky;top:0;z-index:3;cursor:pointer;user-select:none;background:var(--background-fill-secondary,#f6f6f6)}
table.pb-board thead th[aria-sort=ascending]::after{content:" \\25B2"}
table.pb-board thead th[aria-sort=descending]::after{content:" \\25BC"}
table.pb-board .pb-text{text-align:left}
table.pb-board .pb-rank{position:sticky;left:0;z-index:2;width:4.5em;min-width:4.5em;max-width:4.5em;text-align:center;overflow:hidden;text-overflow:ellipsis}
table.pb-board th.pb-rank,table.pb-board td.pb-rank{padding-left:6px;padding-right:6px}
table.pb-board .pb-rank-among{display:block;font-size:11px;color:var(--pb-muted);overflow:hidden;text-overflow:ellipsis}
table.pb-board .pb-model{position:sticky;left:4.5em;z-index:2;min-width:14em;max-width:22em;overflow:hidden;text-overflow:ellipsis;text-align:left}
table.pb-board thead .pb-rank,table.pb-board thead .pb-model{z-index:4}
table.pb-board tr.pb-section-head th{position:static;text-align:left;font-weight:600;cursor:default;background:var(--background-fill-secondary,#eef)}
table.pb-board tr.pb-kind-partial td{background:var(--pb-partial-bg)}
table.pb-board tr.pb-kind-reported td{color:var(--pb-muted);font-style:italic;background:var(--pb-reported-bg)}
table.pb-board tr.pb-group-odd td.pb-rank{box-shadow:inset 4px 0 0 #6366f1}
table.pb-board tr.pb-group-even td.pb-rank{box-shadow:inset 4px 0 0 #a5b4fc}
table.pb-board .pb-distinct{display:block;font-size:11px;color:var(--pb-muted);overflow:hidden;text-overflow:ellipsis}
table.pb-board .pb-n{color:var(--pb-muted);font-size:11px;margin-left:3px}
table.pb-board .pb-ci{color:var(--pb-muted)}
table.pb-board .pb-below-ref{color:var(--pb-below);font-weight:600}
table.pb-board tr.pb-not-above-ref td.pb-model{box-shadow:inset 4px 0 0 #f87171}
table.pb-board .pb-parse-warning{display:block;font-size:11px;color:var(--pb-warn);font-weight:600}
table.pb-board .pb-parse-warning::after{content:"\\26A0  unparsed"}
table.pb-board .pb-items-link{display:block;text-align:left;font-size:11px;line-height:1.3;text-decoration:none;color:var(--pb-link)}
table.pb-board .pb-items-link::after{content:"items \\203A"}
table.pb-board .pb-items-link:hover{text-decoration:underline}
@media (max-width:600px){
 table.pb-board{font-size:13px}
 table.pb-board .pb-model{min-width:9em;max-width:9em}
 table.pb-board .pb-main{position:sticky;left:13.5em;z-index:2;box-shadow:inset -1px 0 0 #ccc}
 table.pb-board thead .pb-main{z-index:4}
}
</style>"""


# Sorts a board's sections (tbody) by one column: numbers as numbers, blanks last (the header
# clicks below, and the first paint's copy of a board in the page's HTML: space/first_paint.py).
SORT_BY_JS = """
const sortBy = (th, descending) => {
  const table = th.closest('table');
  const index = [...th.parentNode.children].indexOf(th);
  table.querySelectorAll('thead th[data-col]').forEach(h => h.removeAttribute('aria-sort'));
  th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
  const numeric = th.dataset.type === 'num';
  for (const body of table.tBodies) {
    const rows = [...body.querySelectorAll('tr[role=row]')];
    const key = r => { const c = r.children[index]; return c ? (c.dataset.sort ?? c.innerText.trim()) : ''; };
    rows.sort((a, b) => {
      const x = key(a), y = key(b);
      if (x === '' || y === '') return (x === '') - (y === '');
      const order = numeric ? Number(x) - Number(y) : x.localeCompare(y);
      return descending ? -order : order;
    });
    rows.forEach(r => body.appendChild(r));
  }
};
"""


# Header clicks sort the rows of each section (tbody) by that column, numbers as numbers, blanks last;
# the sort goes into the tab's view in the URL (`sort=column:desc`, space/url_state.py), and every
# redraw of the table re-applies it (pbUrl.applySort, called by the tab's URL writer), so a shared
# link keeps it. Any table of this shape sorts so: th[data-col] headers (data-type="num" for
# numbers), rows tr[role=row], a cell's data-sort its sort key.
def sort_js(tab: str) -> str:
    """The js_on_load of a gr.HTML holding such a table, in tab `tab`."""
    return (
        PRELUDE
        + f"const TAB = {json.dumps(tab)};"
        + """
"""
        + SORT_BY_JS
        + """element.addEventListener('click', (event) => {
  const th = event.target.closest('th[data-col]');
  if (!th || !element.contains(th) || event.target.closest('a')) return;
  // the view's own sort, not the header's attribute: a redraw landing between two clicks makes a
  // fresh header (no aria-sort), and the second click must still turn descending into ascending
  const descending = pbUrl.get(TAB, 'sort') !== th.dataset.col + ':desc';
  sortBy(th, descending);
  pbUrl.set(TAB, 'sort', th.dataset.col + ':' + (descending ? 'desc' : 'asc'));
});
pbUrl.onSort(TAB, (wanted) => {
  if (!wanted) return;
  const [col, dir] = wanted.split(':');
  const th = [...element.querySelectorAll('thead th[data-col]')].find(h => h.dataset.col === col);
  if (th) sortBy(th, dir !== 'asc');
});
"""
    )


SORT_JS = sort_js(FIRST_TAB)


def _is_score(column: str) -> bool:
    return column == TOTAL or "/" in column or column in known_metrics()


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def shown_columns(board: pd.DataFrame, chosen: list[str] | None) -> list[str]:
    """The board's columns in display order, narrowed by the column chooser."""
    chosen = DEFAULT_COLUMNS if chosen is None else chosen
    ranked_by = board.attrs.get("ranked_by", TOTAL)
    tiers = [c for c in board.columns if "/" in c]
    metrics = [c for c in board.columns if c in known_metrics()]
    columns = [RANK, "model_name", ranked_by]
    if "ci" in chosen:
        columns.append("ci")
    if "reference" in chosen and board.attrs.get("reference_line"):
        columns.append("reference")
    if ranked_by != TOTAL:
        columns.append(TOTAL)
    if "metrics" in chosen:
        columns += metrics
    if "tiers" in chosen:
        columns += [c for c in tiers if c != ranked_by]
    columns += [c for c in PLAIN_CHOOSER_COLUMNS if c in chosen]
    return columns


def _above_reference(row) -> bool | None:
    """The board's verdict (leaderboard/board.py): True, False, or None where there is no line."""
    above = row.get(ABOVE_REFERENCE)
    return None if _missing(above) else bool(above)


def _reference_cell(row, line: dict | None, metric) -> tuple[str, str, str]:
    """Whether the row's 95% interval clears the board's reference line (the best of chance and majority)."""
    above = _above_reference(row)
    if not line or above is None:
        return "", "", "pb-text"
    where = f"{html.escape(line['name'])} = {format_value(line['value'], metric)}"
    if above:
        return f'<span title="95% lower bound above {where}">above</span>', "1", "pb-text"
    return (
        f'<span class="pb-below-ref" title="its 95% interval reaches down to or below {where}: '
        f'not distinguishable from answering without looking at the input">not above {where}</span>',
        "0",
        "pb-text",
    )


Cell = tuple[str, str, str]  # (html, sort key, css class)


def _cell(
    row,
    column: str,
    cells: dict,
    ranked_by: str,
    reference: dict | None = None,
    distinct: dict[str, str] | None = None,
) -> Cell:
    """(html, sort key, css class) for one cell."""
    if column == RANK:
        return _rank_cell(row)
    if column == "model_name":
        return _model_cell(row, distinct or {})
    if column in ("reference", "ci"):
        low, high, n = cells.get((row["submission_id"], ranked_by), (None, None, 0))
        hidden = row.get("row_kind") == KIND_PARTIAL and n and n < MIN_CELL_ITEMS  # too few items
        if column == "reference":  # a hidden score has no verdict either
            if hidden:
                return "", "", "pb-text"
            return _reference_cell(row, reference, row.get("metric"))
        if hidden:
            return "", "", "pb-ci"
        return (
            f'<span class="pb-ci">{format_interval(low, high, row.get("metric"))}</span>',
            "",
            "pb-ci",
        )
    if _is_score(column):
        return _score_cell(row, column, cells, ranked_by)
    return _fact_cell(row, column)


def _rank_cell(row) -> Cell:
    """The rank; a copy of another result, or a row under the reference line, says so instead; a
    rank among another protocol's rows names that protocol."""
    rank = row.get(RANK)
    if row.get(DUPLICATE_OF):
        return (
            f'<span class="pb-duplicate" title="the same predictions (file byte for byte, or a model run\'s answers) as '
            f'{html.escape(str(row[DUPLICATE_OF]))}: one result, ranked once">= copy</span>',
            "",
            "pb-rank",
        )
    if _missing(rank) and row.get("row_kind") == KIND_COMPUTED and _above_reference(row) is False:
        return (
            '<span class="pb-below-ref" title="not ranked: its 95% interval does not clear the reference line">'
            "–</span>",
            "",
            "pb-rank",
        )
    if _missing(rank):
        return "", "", "pb-rank"
    among = row.get(RANK_AMONG)
    if among and not _missing(among):
        # another protocol than the task's default: ranked among its own protocol's rows only
        label = html.escape(str(among))
        # on a line of its own under the rank, cut with an ellipsis: the column is 4.5em wide
        # (it stays in view as the table scrolls), and the title says it whole
        return (
            f'{int(rank)}<span class="pb-rank-among" title="ranked only among {label} rows: '
            f"not the task's default protocol, never ranked against it\">{label}</span>",
            str(int(rank)),
            "pb-rank",
        )
    return str(int(rank)), str(int(rank)), "pb-rank"


def _model_cell(row, distinct: dict[str, str]) -> Cell:
    """The model's name, a link to its page; where another row has the same name, what tells them
    apart, in the cell itself; a row whose answers mostly failed to parse says so."""
    name = str(row["model_name"])
    extra = distinct.get(str(row["submission_id"]), "")
    title = model_title(row, distinct)
    link = f'<a href="/model/{quote(name, safe="")}" title="{html.escape(title)}">{html.escape(name)}</a>'
    if extra:
        link += (
            f'<span class="pb-distinct" title="{html.escape(extra)}">{html.escape(extra)}</span>'
        )
    link += _parse_warning(row) + _items_link(row, title)
    return link, title.lower(), "pb-model pb-text"


def model_title(row, distinct: dict[str, str]) -> str:
    """The model cell's whole text (its name, and what tells it apart): the cell's title, as the
    cell cuts a long name with an ellipsis."""
    extra = distinct.get(str(row["submission_id"]), "")
    return f"{row['model_name']} ({extra})" if extra else str(row["model_name"])


def _items_link(row, title: str) -> str:
    """A small link to the row's answers item by item (the Items tab), where it has any (scored
    here, on a public split). Its word is drawn by CSS (::after), so the cell's text, as copied
    or read, stays the model's name; its accessible name is the aria-label."""
    if not has_item_details(row.get("row_kind"), row.get("suite"), row.get("task")):
        return ""
    href = items_href(str(row["submission_id"]))
    return (
        f'<a class="pb-items-link" href="{html.escape(href)}" title="{html.escape(LINK_TITLE)}" '
        f'aria-label="{html.escape(f"Items of {title}")}"></a>'
    )


def _parse_warning(row) -> str:
    """The mark of a row where more than a tenth of the answers (or of the judge's replies) could
    not be parsed (leaderboard/table.py parse_warning): its score says more about the output
    format than the task."""
    flag = row.get(PARSE_WARNING)
    if _missing(flag) or not bool(flag):  # numpy's bool too; a part before the column: None
        return ""
    said = []
    unparsed, items = row.get("unparsed"), row.get("n_items")
    if not _missing(unparsed) and unparsed:
        said.append(
            f"{int(unparsed)} of {int(items)} answers"
            if not _missing(items) and items
            else f"{int(unparsed)} answers"
        )
    judged = row.get("judge_unparsed")
    if not _missing(judged) and judged:
        said.append(f"{int(judged)} judge replies")
    title = (
        f"{' and '.join(said) or 'more than a tenth of the outputs'} could not be parsed "
        "(scored as unanswered): the score says more about the output format than the task"
    )
    # the mark's word is drawn by CSS (::after), as the items link's: the cell's text, as copied
    # or read, stays the model's name
    return (
        f'<span class="pb-parse-warning" role="img" aria-label="unparsed: {html.escape(title)}" '
        f'title="{html.escape(title)}"></span>'
    )


def _score_cell(row, column: str, cells: dict, ranked_by: str) -> Cell:
    """A score in its metric's format, its interval and item count on hover; a partial run's with
    its count, hidden under too few items."""
    value = row.get(column)
    if _missing(value):
        return "", "", ""
    metric = row.get("metric")
    cell_metric = metric if (column == TOTAL or "/" in column) else column
    low, high, n = cells.get((row["submission_id"], column), (None, None, 0))
    text = format_value(value, cell_metric)
    interval = format_interval(low, high, cell_metric)
    title = f"95% CI {interval}; " if interval else ""
    title += f"{n} items" if n else "item count not reported"
    css = "pb-main" if column == ranked_by else ""
    if row.get("row_kind") == KIND_PARTIAL:
        if n and n < MIN_CELL_ITEMS:  # the ranking column too: too few items to mean anything
            return (
                f'<span title="only {n} items: too few to show a score">– <span class="pb-n">n={n}</span></span>',
                "",
                css,
            )
        text += f' <span class="pb-n">n={n}</span>'
    return f'<span title="{html.escape(title)}">{text}</span>', repr(float(value)), css


def _fact_cell(row, column: str) -> Cell:
    """A model fact or a record's field, as text."""
    value = row.get(column)
    if _missing(value):
        return "", "", "pb-text"
    if column in ("n_items", "unparsed"):
        return (
            ("", "", "")
            if column == "n_items" and not value
            else (str(int(value)), str(int(value)), "")
        )
    if column == "row_kind":
        return html.escape(ROW_KINDS.get(value, str(value))), str(value), "pb-text"
    if column == "submitted_at":
        return html.escape(str(value)[:16].replace("T", " ")), str(value), "pb-text"
    if column == SIZE:
        parameters = row.get("parameters")
        return (
            html.escape(str(value)),
            "" if _missing(parameters) else repr(float(parameters)),
            "pb-text",
        )
    return html.escape(str(value)), str(value).lower(), "pb-text"


def header_labels(board: pd.DataFrame) -> dict[str, str]:
    """Column headers for this board: the ranking score and the total name their metric, the
    reference column names its line ("vs. Majority (always C)")."""
    labels = column_labels()
    metric = next((m for m in board.get("metric", pd.Series(dtype=object)).dropna()), None)
    if metric:
        named = metric_label(metric)
        ranked_by = board.attrs.get("ranked_by", TOTAL)
        labels[TOTAL] = f"{labels.get(TOTAL, 'Total')} · {named}"
        if ranked_by != TOTAL:
            labels[ranked_by] = f"{labels.get(ranked_by, ranked_by)} · {named}"
    line = board.attrs.get("reference_line")
    if line:
        labels["reference"] = f"vs. {line['name']}"
    return labels


def header_title(board: pd.DataFrame, column: str, labels: dict[str, str]) -> str:
    line = board.attrs.get("reference_line")
    if column == "reference" and line:
        metric = next((m for m in board["metric"].dropna()), None)
        return (
            f"Whether the row's 95% interval lies entirely above {line['name']} "
            f"({format_value(line['value'], metric)}), the best score reachable without reading "
            "the input (chance or always the most common answer). Click to sort."
        )
    return f"Sort by {labels.get(column, column)}"


def render_board(
    board: pd.DataFrame,
    cells: pd.DataFrame,
    chosen: list[str] | None = None,
    empty: str = "No results match these filters yet.",
) -> str:
    """The table; `empty` is what an empty board says (why it is empty, and what to do)."""
    if board.empty:
        return STYLE + f'<p class="pb-empty" id="board-empty">{empty}</p>'
    labels = header_labels(board)
    distinct = distinctions(board)
    ranked_by = board.attrs.get("ranked_by", TOTAL)
    columns = shown_columns(board, chosen)
    lookup = {
        (s, c): (lo, hi, int(n))
        for s, c, lo, hi, n in zip(
            cells["submission_id"], cells["column"], cells["ci_low"], cells["ci_high"], cells["n"]
        )
    }
    numeric = {RANK, "n_items", "unparsed", SIZE} | {c for c in columns if _is_score(c)}
    head = "".join(
        f'<th role="columnheader" data-col="{html.escape(c)}" data-type="{"num" if c in numeric else "text"}"'
        f' class="{"pb-rank" if c == RANK else "pb-model pb-text" if c == "model_name" else "pb-main" if c == ranked_by else ""}"'
        f' title="{html.escape(header_title(board, c, labels))}">{html.escape(labels.get(c, c))}</th>'
        for c in columns
    )
    bodies = []
    for kind, section in board.groupby(
        board["row_kind"].where(board["row_kind"].isin(SECTION_TITLES), "reported"), sort=False
    ):
        groups = {
            rank: i for i, rank in enumerate(sorted({r for r in section[RANK] if not _missing(r)}))
        }
        title = (
            UNRANKED_COMPUTED_TITLE
            if kind == KIND_COMPUTED and not groups
            else SECTION_TITLES[kind]
        )
        rows = [
            f'<tr class="pb-section-head"><th colspan="{len(columns)}">{html.escape(title)}</th></tr>'
        ]
        for _, row in section.iterrows():
            group = (
                ""
                if _missing(row.get(RANK))
                else f" pb-group-{'odd' if groups[row[RANK]] % 2 == 0 else 'even'}"
            )
            tds = []
            for column in columns:
                content, key, css = _cell(
                    row, column, lookup, ranked_by, board.attrs.get("reference_line"), distinct
                )
                # the model cell cuts a long name: the whole name on hover, over the whole cell
                title = (
                    f' title="{html.escape(model_title(row, distinct))}"'
                    if column == "model_name"
                    else ""
                )
                tds.append(
                    f'<td role="gridcell" class="{css}" data-sort="{html.escape(key)}"{title}>'
                    f"{content}</td>"
                )
            below = " pb-not-above-ref" if _above_reference(row) is False else ""
            rows.append(
                f'<tr role="row" class="pb-kind-{html.escape(str(kind))}{group}{below}" '
                f'data-id="{html.escape(str(row["submission_id"]))}">{"".join(tds)}</tr>'
            )
        bodies.append(
            f'<tbody class="pb-section" data-kind="{html.escape(str(kind))}">{"".join(rows)}</tbody>'
        )
    return (
        STYLE
        + ranking_note(board)
        + '<div class="pb-board-wrap"><table class="pb-board" role="grid">'
        f'<thead><tr role="row">{head}</tr></thead>{"".join(bodies)}</table></div>'
    )


def ranking_note(board: pd.DataFrame) -> str:
    """Which part of a hidden split ranks this board (leaderboard/board.py ranked_on); nothing on a
    public split's board."""
    parts = board.attrs.get(RANKED_ON) or {}
    private, public = parts.get("private", 0), parts.get("public", 0)
    if not private and not public:
        return ""
    if private and not public:
        text = (
            "Ranked on the hidden split's private part, published by a named release: "
            "this is the board of record for this version."
        )
    elif public and not private:
        text = (
            "Live: ranked on the hidden split's public part (one rounded number per result). "
            "The private part ranks the board from the next named release on."
        )
    else:
        text = (
            f"{private} row(s) ranked on the private part (published by a named release); "
            f"{public} newer row(s) on the public part (live) until the next release. "
            "The 'Ranked on' column of the downloads says which."
        )
    return f'<p class="pb-ranked-on" id="board-ranked-on">{html.escape(text)}</p>'
