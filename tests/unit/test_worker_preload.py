"""A worker that ran a model job imports the model code once, so that its later work-horses (forked
from it) inherit torch and transformers' model classes instead of importing them per job (~5 CPU s
each). In a fresh interpreter: this test process has imported them already."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from submissions.worker import preload_model_code
heavy = ("torch", "transformers.modeling_utils", "evaluator.backends.hf_transformers")
assert not any(name in sys.modules for name in heavy), [n for n in heavy if n in sys.modules]
preload_model_code()
print(",".join(name for name in heavy if name in sys.modules))
"""


def test_preloading_imports_torch_and_the_model_code_and_nothing_before():
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().split(",") == [
        "torch",
        "transformers.modeling_utils",
        "evaluator.backends.hf_transformers",
    ]
