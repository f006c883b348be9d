"""The project's YAML files read through libyaml's parser (evaluator/yaml_files.py) give the data
PyYAML's own safe loader gives, file by file; a broken file is still a YAMLError."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from evaluator.yaml_files import SafeLoader, YAMLError, parse_yaml, read_yaml

ROOT = Path(__file__).resolve().parents[2]
FILES = subprocess.run(
    ["git", "ls-files", "*.yaml", "*.yml"], cwd=ROOT, capture_output=True, text=True, check=True
).stdout.split()
PROJECT_FILES = [f for f in FILES if f.startswith(("evaluator/", "leaderboard/"))]


def test_libyaml_is_what_the_project_reads_with():
    # the wheels PyPI ships carry it; without it the Python parser is used, only slower
    assert SafeLoader is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    assert yaml.__with_libyaml__ and SafeLoader is yaml.CSafeLoader


@pytest.mark.parametrize("name", PROJECT_FILES)
def test_every_project_file_reads_the_same_with_either_parser(name):
    path = ROOT / name
    expected = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert expected, f"{name} read as empty"
    assert read_yaml(path) == expected


def test_scalars_resolve_as_pyyaml_resolves_them():
    text = "a: 1\nb: 1.5\nc: yes\nd: null\ne: '007'\nf: 2026-12-02\ng: [x, {h: -3}]\n"
    assert parse_yaml(text) == yaml.safe_load(text)


def test_a_broken_file_is_a_yaml_error(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [1, 2\nb: 3\n")
    with pytest.raises(YAMLError):
        read_yaml(broken)
    with pytest.raises(yaml.constructor.ConstructorError):
        parse_yaml("!!python/object:os.system {}")  # safe: no arbitrary objects
