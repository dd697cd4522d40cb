"""docs/configuration.md is the output of ``memory-kernel config --markdown``: it lists every
field of every section, and cannot drift from the config package."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel
from typer.testing import CliRunner

from memory_kernel.cli import app
from memory_kernel.config import MemoryKernelConfig
from memory_kernel.config_reference import render_markdown

runner = CliRunner()
DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_every_field_has_a_description() -> None:
    for name, info in MemoryKernelConfig.model_fields.items():
        section = info.annotation
        assert isinstance(section, type) and issubclass(section, BaseModel), name
        for field, finfo in section.model_fields.items():
            assert finfo.description and len(finfo.description) > 20, f"{name}.{field}"


def test_docs_configuration_is_up_to_date() -> None:
    # Regenerate with: memory-kernel config --markdown > docs/configuration.md
    assert DOC.read_text(encoding="utf-8") == render_markdown()


def test_the_reference_names_every_field_with_its_default() -> None:
    text = render_markdown()
    config = MemoryKernelConfig()
    for name in MemoryKernelConfig.model_fields:
        section = getattr(config, name)
        assert f"## `{name}`" in text
        for field in type(section).model_fields:
            assert f"| `{field}` |" in text, f"{name}.{field}"
    assert "| `fact_dedup_similarity` | float | `0.33` | ≥ 0.0, ≤ 1.0 |" in text


def test_config_command(tmp_path: Path) -> None:
    markdown = runner.invoke(app, ["config", "--markdown"])
    assert markdown.exit_code == 0 and markdown.output == render_markdown()
    shown = runner.invoke(app, ["config"])
    assert shown.exit_code == 0
    assert MemoryKernelConfig.from_mapping(json.loads(shown.output)) == MemoryKernelConfig()
    custom = tmp_path / "c.json"
    custom.write_text('{"heart": {"fact_dedup_similarity": 0.4}}', encoding="utf-8")
    loaded = runner.invoke(app, ["config", "--file", str(custom)])
    assert json.loads(loaded.output)["heart"]["fact_dedup_similarity"] == 0.4
    custom.write_text('{"heart": {"fact_dedup_similarity": 4}}', encoding="utf-8")
    broken = runner.invoke(app, ["config", "--file", str(custom)])
    assert broken.exit_code == 1 and "error:" in broken.output
