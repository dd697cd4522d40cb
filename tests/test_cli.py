"""The command line: doctor and migrate against a real server, errors as one line."""

from __future__ import annotations

from typer.testing import CliRunner

from memory_kernel.cli import app
from memory_kernel.storage.migrate import head_revision

runner = CliRunner()


def test_migrate_then_doctor_report_the_head_revision(pg_dsn: str, drop_schema: str) -> None:
    migrated = runner.invoke(app, ["migrate", "--dsn", pg_dsn, "--schema", drop_schema])
    assert migrated.exit_code == 0, migrated.output
    assert f"revision {head_revision()}" in migrated.output
    doctor = runner.invoke(app, ["doctor", "--dsn", pg_dsn, "--schema", drop_schema])
    assert doctor.exit_code == 0, doctor.output
    assert "pgvector" in doctor.output and "none yet" in doctor.output


def test_unreachable_database_is_one_error_line_and_exit_1() -> None:
    result = runner.invoke(app, ["doctor", "--dsn", "postgresql://nobody@127.0.0.1:1/x"])
    assert result.exit_code == 1
    assert "error:" in result.output and "Traceback" not in result.output
