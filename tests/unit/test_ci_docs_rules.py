"""docs/ci.md agrees with what is measured and with the server: its example rules are the ones
``benchmarks/gate_calibration.py`` calibrates (an unchanged MNIST CNN passes them), in every CI
example, and the default rule it names is the server's (``core.defaults``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.ci_docs import CI_DOC, documented_command
from zootriage.core.defaults import product_default

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "gate_calibration.py"


def _calibrated_rules() -> tuple[str, ...]:
    for node in ast.parse(BENCHMARK.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "RULES" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("benchmarks/gate_calibration.py defines no RULES")


def test_every_documented_gate_uses_the_calibrated_rules() -> None:
    text = CI_DOC.read_text()
    rules = _calibrated_rules()
    gate = documented_command(text, "zootriage gate")
    assert tuple(gate[i + 1] for i, arg in enumerate(gate) if arg == "--rule") == rules
    blocks = re.findall(r"```(?:yaml)?\n(.*?)```", text, re.DOTALL)
    gating = [block for block in blocks if "--rule" in block]
    assert len(gating) == 3  # the typical gate, GitHub Actions, GitLab CI
    for block in gating:
        assert tuple(re.findall(r'--rule "([^"]+)"', block)) == rules
    assert "utilization: min" not in text and "--per-class 50" not in text


def test_the_documented_default_rule_is_the_servers() -> None:
    named = re.findall(r"`(\w+)` \(the server's default", CI_DOC.read_text())
    assert named == [product_default().rule]
    prose = {"id_accuracy": "ID accuracy", "geometry": "geometry"}[product_default().rule]
    assert f"default triage rule is **{prose}**" in CI_DOC.read_text().replace("\n", " ")
