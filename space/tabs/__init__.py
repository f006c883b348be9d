"""One builder per tab: each lays out its tab inside the page's Blocks and wires its own events.

Builders take `services`, the app's submissions.service.Services (the submissions layer: space and
backend both import it downward).
"""
