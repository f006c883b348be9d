"""The Submission status tab: look a submission up by its id, or pick one of those made from this
browser (kept in its localStorage, so they survive a reload and a closed tab).

While the submission shown is queued or running, the tab follows it without a click: a timer
redraws its status (and, when its state changes, the list of this browser's submissions) every
few seconds, and stops at a final state. The timer runs only while this tab is open (build_ui
switches it with the tabs, as the Queue's and Service's), so a page looking elsewhere costs the
server nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import gradio as gr

from space.my_submissions import remembered_ids
from space.status_text import TERMINAL_STATES, format_status, inert
from space.url_state import STATUS_TAB

if TYPE_CHECKING:
    from submissions.service import Services

REFRESH_S = 2.0
# a long label ends with an ellipsis before the list's arrow, which Gradio lays over the input's end
STYLE = (
    "<style>#status-style{display:none}#status-mine input[role=combobox]"
    "{padding-right:28px;text-overflow:ellipsis}</style>"
)
NOT_FOLLOWED = ("", "")  # (id, state) of the submission followed: none


# -- handlers: the services and the id (or this browser's stored ids) in, view data out
# (tests/unit/test_tab_handlers.py)


@dataclass(frozen=True)
class StatusView:
    """The status shown, and what the timer follows: (id, state) while it is queued or running,
    NOT_FOLLOWED once final (or for no submission)."""

    text: str
    followed: tuple[str, str] = NOT_FOLLOWED


def status_view(services: Services, submission_id) -> StatusView:
    found = services.submission((submission_id or "").strip())
    if not found:
        return StatusView(f"No submission with id {inert(submission_id or '')}.")
    status = services.submission_status(found)
    if status["state"] in TERMINAL_STATES:
        return StatusView(format_status(status))
    return StatusView(format_status(status), (found.id, status["state"]))


def tick_stops_timer(view: StatusView) -> bool:
    """A tick stops the timer once the submission is final, and otherwise leaves it as it is: it
    never starts it. A tick answered after the reader opened another tab would start again the
    timer the tab switch stopped (follow_with_tabs), and then it polled for good (CI, loaded)."""
    return not view.followed[0]


def my_choices(services: Services, stored) -> list[tuple[str, str]]:
    """One choice per remembered submission this server knows: "state · model (suite/task,
    setting)", the state first: a phone's box cuts a long label's end."""
    choices = []
    for found in filter(None, (services.submission(i) for i in remembered_ids(stored))):
        choices.append(
            (
                f"{found.state} · {found.model_name} ({found.suite}/{found.task}, {found.setting})",
                found.id,
            )
        )
    return choices


# -- the Gradio side ------------------------------------------------------------------------------


def build_status_tab(ui: gr.Blocks, services, mine: gr.BrowserState) -> tuple[gr.Timer, gr.State]:
    """Returns the tab's timer and what it follows, for follow_with_tabs."""

    def lookup(submission_id):
        """The status shown, what the timer follows and the timer itself."""
        found = status_view(services, submission_id)
        return found.text, found.followed, gr.Timer(active=bool(found.followed[0]))

    def my_list(stored):
        choices = my_choices(services, stored)
        return gr.update(choices=choices, value=None, visible=bool(choices))

    def pick(submission_id, stored):
        """A submission of this browser's, looked up; the list redrawn too (its labels' states
        are those of when it was drawn)."""
        if not submission_id:
            return (gr.skip(),) * 5
        choices = my_choices(services, stored)
        return (submission_id, *lookup(submission_id), gr.update(choices=choices))

    def tick(followed, stored):
        """The followed submission's status, again; the list of this browser's submissions only
        when its state changed (its label says the state; the choice picked stays picked)."""
        submission_id, state = followed or NOT_FOLLOWED
        if not submission_id:
            return gr.skip(), NOT_FOLLOWED, gr.Timer(active=False), gr.skip()
        found = status_view(services, submission_id)
        changed = (found.followed[1] or "final") != state
        mine_update = gr.update(choices=my_choices(services, stored)) if changed else gr.skip()
        timer = gr.Timer(active=False) if tick_stops_timer(found) else gr.skip()
        return found.text, found.followed, timer, mine_update

    with gr.Tab("Submission status", id=STATUS_TAB):
        gr.HTML(STYLE, elem_id="status-style", padding=False)
        q_mine = gr.Dropdown(
            [], label="Submitted from this browser", visible=False, elem_id="status-mine"
        )
        q_id = gr.Textbox(label="Submission id", elem_id="status-id")
        q_button = gr.Button("Look up", elem_id="status-button")
        q_status = gr.Markdown(elem_id="status-result")
        followed = gr.State(NOT_FOLLOWED)
        timer = gr.Timer(REFRESH_S, active=False)
    q_button.click(lookup, q_id, [q_status, followed, timer])

    def from_link(request: gr.Request):
        """`/?status=<id>` (the queue's and the status line's links): that submission, looked up
        (the link opens this tab, so the timer may run)."""
        wanted = (dict(request.query_params).get("status") or "")[:100] if request else ""
        return (wanted, *lookup(wanted)) if wanted else (gr.skip(),) * 4

    ui.load(from_link, None, [q_id, q_status, followed, timer])
    ui.load(my_list, mine, q_mine)
    mine.change(my_list, mine, q_mine)
    q_mine.input(pick, [q_mine, mine], [q_id, q_status, followed, timer, q_mine])
    timer.tick(tick, [followed, mine], [q_status, followed, timer, q_mine], show_progress="hidden")
    return timer, followed


def follow_with_tabs(tabs: gr.Tabs, timer: gr.Timer, followed: gr.State) -> None:
    """The status tab's timer runs while that tab is open and follows an unfinished submission;
    another tab opened stops it."""

    def switched(event: gr.SelectData, now):
        opened = (event._data or {}).get("id")
        return gr.Timer(active=opened == STATUS_TAB and bool((now or NOT_FOLLOWED)[0]))

    tabs.select(switched, followed, timer, show_progress="hidden")
