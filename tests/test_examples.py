"""Every example in ``examples/`` runs as a user would run it — a subprocess — and prints
what it claims to show. Each gets a fresh schema of the session's server through
``MEMORY_KERNEL_DSN`` + ``MEMORY_KERNEL_SCHEMA`` (see ``examples/_store.py``), so no example
pays for starting an embedded server of its own."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import memory_kernel

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
OURS = (
    "quickstart",
    "agent_loop",
    "langgraph_node",
    "custom_context_node",
    "nightly_consolidation",
)


def run_example(name: str, dsn: str, schema: str, *, code: str | None = None) -> str:
    env = {**os.environ, "MEMORY_KERNEL_DSN": dsn, "MEMORY_KERNEL_SCHEMA": schema}
    script = str(EXAMPLES / f"{name}.py")
    argv = [sys.executable, script] if code is None else [sys.executable, "-c", code, script]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, check=False, env=env, cwd=EXAMPLES
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def blocks(output: str, start: str) -> list[str]:
    """The output split into the blocks that begin with a line starting with ``start``."""
    return [start + part for part in re.split(rf"^{re.escape(start)}", output, flags=re.M)[1:]]


def field(block: str, name: str) -> str:
    match = re.search(rf"^\s*{name}\s*: (.*)$", block, flags=re.M)
    assert match, f"no {name!r} line in:\n{block}"
    return match.group(1)


def test_examples_use_only_the_public_api() -> None:
    public = set(memory_kernel.__all__)
    for name in (*OURS, "_store"):
        tree = ast.parse((EXAMPLES / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memory_kernel"):
                # memory_kernel.testing is public too: the fakes users run in their own tests.
                assert node.module in ("memory_kernel", "memory_kernel.testing"), (
                    name,
                    node.module,
                )
                if node.module == "memory_kernel":
                    assert {a.name for a in node.names} <= public, name


def test_quickstart_supersedes_injects_and_recalls(pg_dsn: str, drop_schema: str) -> None:
    out = run_example("quickstart", pg_dsn, drop_schema)
    assert "learn: superseded - same subject" in out
    context = out.split("tokens of context\n", 1)[1].split("post_turn:", 1)[0]
    assert "## Known facts" in context and "- Spec 006 has shipped" in context
    assert "planned" not in context  # the superseded fact is history, not context
    hits = re.findall(r"^search_memory: \d\.\d\d (.+)$", out, flags=re.M)
    assert hits == ["Spec 006 has shipped"]
    assert "decision: not_deliberated" in out  # a question frame records no decision


def test_agent_loop_gates_context_calls_the_tool_and_filters_decisions(
    pg_dsn: str, drop_schema: str
) -> None:
    out = run_example("agent_loop", pg_dsn, drop_schema)
    hey, database, deadline, ship = blocks(out, "user: ")
    # A greeting fetches no memory at all.
    assert "facts" in field(hey, "nodes").split("skipped")[1]
    assert field(hey, "injected") == "0 tokens: (nothing)"
    assert "tool call" not in hey
    # A decision turn: the relevant facts are injected, the answer is recorded as a decision.
    assert "The team runs PostgreSQL 16 as its production database" in database
    assert "tool call" not in database  # the context already had what the model needed
    assert field(database, "recorded").startswith("decision 'Use PostgreSQL for the orders")
    # A low-confidence fact is not injected passively; the model finds it with the tool.
    injected = deadline.split("tool call")[0]
    assert "March 14" not in injected
    assert "search_memory" in field(deadline, "tool call")
    assert "March 14" in deadline.split("tool said")[1]
    assert field(deadline, "model") == "The payments API deadline moved to March 14."
    assert field(deadline, "recorded").startswith("no decision (not_deliberated")
    # The recorded decision comes back in the next turn; "Done! ✅" is not a decision.
    assert "## Related decisions" in ship and "Use PostgreSQL" in ship
    assert field(ship, "recorded") == "no decision (informational, layer 1: completion)"
    assert '"recorded":1' in out and '"informational":{"rejected":1' in out


def test_langgraph_example_runs_the_hooks_as_graph_nodes(pg_dsn: str, drop_schema: str) -> None:
    out = run_example("langgraph_node", pg_dsn, drop_schema)
    if importlib.util.find_spec("langgraph") is None:  # CI without the optional extra
        assert out.strip().startswith("langgraph is not installed")
        return
    decide, ask = blocks(out, "user: ")
    # The pre_turn node injected the fact, so the model node answered without the tool.
    assert "- The invoice events flow through the RabbitMQ cluster" in decide
    assert "  tool " not in decide
    assert field(decide, "post_turn").startswith("decision recorded: Use the existing RabbitMQ")
    assert "5 times" in field(ask, "tool")  # the model node asked, the tool node answered
    assert field(ask, "model") == "Invoices are retried 5 times before paging someone."
    assert field(ask, "post_turn") == "no decision (not_deliberated: frame: question)"


def test_langgraph_example_without_langgraph_says_so(pg_dsn: str, drop_schema: str) -> None:
    # A None entry in sys.modules makes the package unfindable and unimportable.
    code = (
        "import runpy, sys; sys.modules['langgraph'] = None; sys.argv = sys.argv[1:]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    out = run_example("langgraph_node", pg_dsn, drop_schema, code=code)
    assert out.startswith("langgraph is not installed")
    assert "pip install langgraph" in out and "user:" not in out


def test_custom_node_is_fetched_in_one_mode_and_skipped_in_another(
    pg_dsn: str, drop_schema: str
) -> None:
    out = run_example("custom_context_node", pg_dsn, drop_schema)
    assert "world_state" in out.splitlines()[0] and "identity_context" in out.splitlines()[0]
    plan, chat, hey = blocks(out, "[")
    assert plan.startswith("[PLAN]") and chat.startswith("[CHAT]") and hey.startswith("[CHAT]")
    assert "world_state" in field(plan, "included")
    assert field(plan, "world_state provider") == "fetched (calls so far: 1)"
    assert "| ## World state" in plan and "| - staging runs build 4127" in plan
    assert "world_state" in field(chat, "skipped")
    assert field(chat, "world_state provider") == "never fetched (calls so far: 1)"
    assert "World state" not in chat and "| ## Known facts" in chat
    assert "facts" in field(hey, "skipped").split(", ")  # the custom signal rule
    assert "Known facts" not in hey and "| ## Identity" in hey


def confidences(line: str) -> dict[str, tuple[float, str]]:
    values = re.findall(r"(\w+) (\d\.\d\d) (\w+)", line)
    return {name: (float(value), status) for name, value, status in values}


def test_nightly_consolidation_dry_run_then_real_run(pg_dsn: str, drop_schema: str) -> None:
    out = run_example("nightly_consolidation", pg_dsn, drop_schema)
    before = confidences(field(out, "before"))
    dry = confidences(field(out, "after dry run"))
    real = confidences(field(out, "after real run"))
    assert dry == before  # a dry run changes nothing
    assert real["vpn"][1] == "deprecated"  # decayed below 0.3
    for side in ("backup_on", "backup_off"):  # contradiction: halved, then decayed
        assert real[side][1] == "active" and 0.3 < real[side][0] < before[side][0] / 2
    assert real["theme"][0] > before["theme"][0]  # the merged duplicate is evidence
    dry_counts = blocks(out, "consolidate(ops-agent, dry_run=True)")[0].splitlines()[1]
    real_counts = blocks(out, "consolidate(ops-agent) ")[0].splitlines()[1]
    for action in ("contradiction 1", "reinforced 1", "deprecated 1", "merged 1"):
        assert action in real_counts
    assert dry_counts == real_counts  # the dry run reports exactly what the real run does
    every = blocks(out, "consolidate_all(concurrency=2)")[0].splitlines()
    rows = {line.split()[0]: line for line in every[1:3]}
    assert set(rows) == {"ops-agent", "support-agent"}
    assert all(" done " in row for row in rows.values())
    assert "merged 1" in rows["support-agent"]  # its two deferred paraphrases became one
    assert "failed: []" in out
