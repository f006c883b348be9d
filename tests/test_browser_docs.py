"""/docs in Chromium: Swagger UI, served by the app itself, renders the app's own OpenAPI document
(`openapi: 3.1.0`) at 1,400 and 390 px: the operations are listed, none of "Unable to render this
definition" (what Swagger UI 4 said of a 3.1 document), one operation opens on its parameters and
responses as the document has them, and no request leaves the service (it works offline)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")

from browser_helpers import DEADLINE_MS, launch_chromium  # noqa: E402
from playwright.sync_api import expect  # noqa: E402

LEADERBOARD = "/api/v1/leaderboard"


@pytest.fixture(scope="module")
def browser():
    with launch_chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def document(shared_live_service):
    with shared_live_service.http() as http:
        answer = http.get("/openapi.json")
    assert answer.status_code == 200
    return answer.json()


def test_the_document_is_openapi_3_1(document):
    # the version Swagger UI 4 refused; kept, not downgraded to please an old viewer
    assert document["openapi"].startswith("3.1")
    assert "get" in document["paths"][LEADERBOARD]


@pytest.mark.parametrize("width", [1400, 390])
def test_docs_render_the_apps_operations(shared_live_service, browser, document, width):
    base = shared_live_service.base_url
    context = browser.new_context(viewport={"width": width, "height": 900}, base_url=base)
    context.set_default_timeout(DEADLINE_MS)
    requested: list[str] = []
    context.on("request", lambda request: requested.append(request.url))
    page = context.new_page()
    try:
        page.goto("/docs")
        operation = page.locator(
            f'.opblock-get:has(.opblock-summary-path[data-path="{LEADERBOARD}"])'
        )
        expect(operation).to_be_visible()
        # every operation of the document is listed (method and path)
        listed = page.locator(".opblock-summary-path").evaluate_all(
            "nodes => nodes.map(n => n.getAttribute('data-path'))"
        )
        expected = [path for path, ops in document["paths"].items() for _ in ops]
        assert sorted(listed) == sorted(expected)
        assert page.get_by_text("Unable to render this definition").count() == 0
        assert page.locator(".errors-wrapper").count() == 0
        # the version stamp Swagger UI 5 shows for a 3.1 document
        expect(page.locator(".info .version-stamp", has_text="OAS 3.1")).to_be_visible()

        # opened, the operation shows the parameters and responses the document declares
        operation.locator(".opblock-summary").first.click()
        body = operation.locator(".opblock-body")
        expect(body).to_be_visible()
        declared = document["paths"][LEADERBOARD]["get"]
        names = [p["name"] for p in declared.get("parameters", [])]
        assert names, "the leaderboard operation declares its query parameters"
        for name in names:
            expect(body.locator(f'tr[data-param-name="{name}"]')).to_be_attached()
        for status in declared["responses"]:
            expect(body.locator(f'tr.response[data-code="{status}"]')).to_be_attached()
        # nothing fetched from anywhere but the service (no CDN: the page works offline)
        outside = [url for url in requested if not url.startswith(base)]
        assert outside == [], outside
        assert any(re.search(r"/docs-assets/swagger-ui-bundle\.js$", url) for url in requested)
    finally:
        context.close()
