"""One builder per tab: each lays out its tab inside the page's Blocks and wires its own events.

Builders take `services`, the app's backend.services.Services (not imported here: space sits
beside backend, and the layer check keeps it from importing upward).
"""
