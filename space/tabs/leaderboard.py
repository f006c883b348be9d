"""The Leaderboard tab: filters, the table, its downloads."""
from __future__ import annotations

import html
from dataclasses import dataclass
from urllib.parse import urlencode

import gradio as gr

from space.choices import ALL, setting_choices, suite_choices, task_choices, tier_choices
from space.display import display_table


@dataclass
class LeaderboardTab:
    table: gr.DataFrame
    refresh: gr.Button


def download_links(suite, task, setting, tier) -> str:
    params = {k: v for k, v in {"suite": suite, "task": task, "setting": setting, "tier": tier}.items() if v and v != ALL}
    links = []
    for fmt in ("csv", "json", "parquet"):
        url = "/api/v1/leaderboard?" + urlencode({**params, "format": fmt})
        links.append(f'<a class="pb-download" href="{html.escape(url)}" download="leaderboard.{fmt}">{fmt.upper()}</a>')
    return "Download this table (full precision): " + " · ".join(links)


def build_leaderboard_tab(ui: gr.Blocks, services) -> LeaderboardTab:
    def leaderboard_table(suite, task, setting, tier):
        frame = services.leaderboard(*(None if v in (None, "", ALL) else v for v in (suite, task, setting, tier)))
        links = download_links(suite, task, setting, tier)
        if frame.empty:
            links = "<p><em>No results match these filters yet.</em></p>" + links
        return display_table(frame), links

    def on_suite(suite):
        tasks = task_choices(suite)
        return (gr.update(choices=[(ALL, ALL), *tasks], value=ALL),
                gr.update(choices=[ALL, *setting_choices(suite)], value=ALL),
                gr.update(choices=[(ALL, ALL), *tier_choices(suite, None)], value=ALL))

    def on_task(suite, task):
        return gr.update(choices=[(ALL, ALL), *tier_choices(suite, task)], value=ALL)

    with gr.Tab("Leaderboard", id="leaderboard"):
        with gr.Row():
            f_suite = gr.Dropdown([(ALL, ALL), *suite_choices()], value=ALL, label="Suite", elem_id="filter-suite")
            f_task = gr.Dropdown([(ALL, ALL)], value=ALL, label="Task", elem_id="filter-task")
            f_setting = gr.Dropdown([ALL, *setting_choices(None)], value=ALL, label="Setting", elem_id="filter-setting")
            f_tier = gr.Dropdown([(ALL, ALL), *tier_choices(None, None)], value=ALL, label="Tier", elem_id="filter-tier")
        with gr.Row(equal_height=True):
            gr.Markdown("Shares (accuracy, precision, recall, F1, rates) in percent with one decimal; Spearman and "
                        "ratings as they are. Total and tier columns are in each row's Metric. Downloads keep full "
                        "precision. Pick a tier to rank by it.", elem_id="leaderboard-help")
            refresh = gr.Button("Refresh", size="sm", scale=0, min_width=110, elem_id="refresh-leaderboard")
        table = gr.DataFrame(interactive=False, wrap=False, elem_id="leaderboard-table", show_search="filter",
                             pinned_columns=1, max_height=600)
        downloads = gr.HTML(elem_id="leaderboard-downloads")

    filters = [f_suite, f_task, f_setting, f_tier]
    f_suite.change(on_suite, f_suite, [f_task, f_setting, f_tier]).then(leaderboard_table, filters, [table, downloads])
    f_task.change(on_task, [f_suite, f_task], f_tier).then(leaderboard_table, filters, [table, downloads])
    for control in (f_setting, f_tier):
        control.change(leaderboard_table, filters, [table, downloads])
    refresh.click(leaderboard_table, filters, [table, downloads])
    ui.load(leaderboard_table, filters, [table, downloads])
    return LeaderboardTab(table=table, refresh=refresh)
