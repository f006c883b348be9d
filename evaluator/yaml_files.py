"""The project's YAML files (suite manifests, prompts, metrics, reported tables, the column
registry), parsed by libyaml where PyYAML was built with it.

Every process reads them at start (the web app, each worker, the CLI): with the pure-Python
parser that took ~0.7 s of CPU per process (the prompts and reported tables are large); libyaml's
parser builds the same objects (the resolver and constructor are PyYAML's own) in a tenth of it.
tests/unit/test_yaml_files.py checks both loaders give the same data for every file here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAMLError = yaml.YAMLError


def parse_yaml(text: str) -> Any:
    """yaml.safe_load, on libyaml's parser when it is there."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader (C or Python)


def read_yaml(path: Path | str) -> Any:
    """The data of a UTF-8 YAML file."""
    return parse_yaml(Path(path).read_text(encoding="utf-8"))
