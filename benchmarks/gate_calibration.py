"""Does a CI gate pass an unchanged model and fail a degraded one? ccexam's MNIST CNN on builtin:mnist.

For each sampling seed s (``--seeds``), the default sample (points_per_class × repeats test images per
class, seed s) goes through the network once; the markers are computed in this process under the
default protocol (``core.markers.compute_markers``: every marker with its noise over GLUE's disjoint
subsets) and gated by ``core.triage.evaluate_gate`` with the rules of docs/ci.md (``--rule`` to
change them), exactly as the service would read the stored runs. Four gates per seed:

- self, same images: the baseline's own weights on its own sample, as the service compares them (a
  gate compares runs of one dataset sample). The change is 0; the gate passes when the margin
  exceeds the noise (q·se ≤ δ).
- self, new images: the same weights scored on seed s + 1's images against seed s's: the whole
  sampling noise between two runs. Expected: ≥ 95 % pass, 0 fail.
- degraded, same / new images: the candidate's penultimate features with Gaussian noise added
  (std ``--noise`` × their RMS), logits recomputed through the network's last layer. Expected: fail.

Prints each scenario's pass / fail / inconclusive counts and rates, and the noise of each rule; then
the /compare self-test: every marker of the first 10 seeds' runs against the first run's, by the
Welch test /compare highlights with (about 5 % of the cells at 95 % when the noise is right).

    PYTHONPATH=. .venv/bin/python benchmarks/gate_calibration.py [--seeds 20] [--noise 1.0] [--n-t 1000]

42 scored runs at the defaults: about 5 minutes on two idle CPU cores (607 s on two busy shared ones).
"""

from __future__ import annotations

import argparse
import sysconfig
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch

from tests.mnist_features import ccexam_outputs
from zootriage.core.markers import Protocol, compute_markers, list_markers
from zootriage.core.noise import compare
from zootriage.core.triage import MarkerRecord, RuleError, evaluate_gate, parse_rule

# The example of docs/ci.md (a test keeps them equal).
RULES = (
    "id_accuracy: max_drop 0.02",
    "dimension: max_relative_drop 0.1",
    "utilization: max_relative_drop 0.1",
)
SCENARIOS = ("self, same images", "self, new images", "degraded, same images", "degraded, new images")


def last_layer() -> tuple[np.ndarray, np.ndarray]:
    """The network's last linear layer (128 → 10), to recompute the logits of degraded features."""
    weights = Path(sysconfig.get_paths()["purelib"]) / "ccexam" / "weights" / "mnist.pth"
    state = torch.load(weights, map_location="cpu", weights_only=True)
    return state["classifier.2.weight"].double().numpy(), state["classifier.2.bias"].double().numpy()


def record(
    name: str, features: np.ndarray, logits: np.ndarray, labels: np.ndarray, protocol: Protocol
) -> MarkerRecord:
    """A run's markers as the service stores and reads them (``app.services.triage.record_of``)."""
    markers = compute_markers(features, labels, logits, protocol=protocol, device="cpu")
    return MarkerRecord(
        name,
        {k: v.value for k, v in markers.items()},
        {k: v.std for k, v in markers.items()},
        repeats=protocol.repeats,
        undecidable={k: v.reason or "not decidable" for k, v in markers.items() if not v.decidable},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--noise", type=float, default=1.0, help="added feature noise, × the features' RMS")
    parser.add_argument("--n-t", type=int, default=1000)
    parser.add_argument("--rule", action="append", help="a gate rule (repeatable; default: docs/ci.md's)")
    args = parser.parse_args()
    if args.seeds < 1 or args.n_t < 1 or not args.noise > 0:
        parser.error("--seeds and --n-t must be at least 1, --noise above 0")
    protocol = Protocol(n_t=args.n_t)
    per_class = (protocol.points_per_class or 50) * protocol.repeats
    rules_text = args.rule or list(RULES)
    try:
        rules = [parse_rule(text, {spec.name for spec in list_markers()}) for text in rules_text]
    except RuleError as exc:
        parser.error(str(exc))
    weight, bias = last_layer()
    rng = np.random.default_rng(12345)
    start = time.perf_counter()
    clean: list[MarkerRecord] = []
    degraded: list[MarkerRecord] = []
    accuracy: list[tuple[float, float]] = []
    for seed in range(args.seeds + 1):  # seed s + 1 is seed s's "new images"
        x, z, y = ccexam_outputs(per_class, seed)
        noisy = x + rng.normal(0.0, args.noise * float(np.sqrt((x**2).mean())), x.shape)
        noisy_logits = noisy @ weight.T + bias
        clean.append(record(f"clean-{seed}", x, z, y, protocol))
        degraded.append(record(f"degraded-{seed}", noisy, noisy_logits, y, protocol))
        accuracy.append((float((z.argmax(1) == y).mean()), float((noisy_logits.argmax(1) == y).mean())))
    outcomes: dict[str, Counter[str]] = {name: Counter() for name in SCENARIOS}
    for s in range(args.seeds):
        pairs = {
            SCENARIOS[0]: (clean[s], clean[s]),
            SCENARIOS[1]: (clean[s + 1], clean[s]),
            SCENARIOS[2]: (degraded[s], clean[s]),
            SCENARIOS[3]: (degraded[s + 1], clean[s]),
        }
        for name, (candidate, baseline) in pairs.items():
            outcomes[name][evaluate_gate(candidate, baseline, rules).status] += 1
    elapsed = time.perf_counter() - start

    print(
        f"ccexam MNIST CNN on builtin:mnist test, {per_class} images per class, default protocol "
        f"(n_t={protocol.n_t}, {protocol.repeats} repeats of {protocol.points_per_class}), {args.seeds} seeds"
    )
    print("rules: " + "; ".join(rules_text))
    print(
        f"ID accuracy: clean {np.mean([a for a, _ in accuracy]):.4f}, "
        f"degraded (feature noise {args.noise:g} × RMS) {np.mean([b for _, b in accuracy]):.4f}"
    )
    first = evaluate_gate(clean[1], clean[0], rules)
    for outcome in first.outcomes:
        print(f"  {outcome.rule}: e.g. self on new images: {outcome.reason}")
    print(f"{'scenario':<24} {'pass':>5} {'fail':>5} {'inconcl.':>8} {'pass rate':>9} {'fail rate':>9}")
    for name in SCENARIOS:
        counts = outcomes[name]
        n = sum(counts.values())
        print(
            f"{name:<24} {counts['passed']:>5} {counts['failed']:>5} {counts['inconclusive']:>8} "
            f"{counts['passed'] / n:>9.0%} {counts['failed'] / n:>9.0%}"
        )
    ten = clean[:10]
    flagged, cells = compare_self_test(ten)
    print(
        f"/compare self-test: {len(ten)} seeds of one model, {flagged} of {cells} cells beyond the "
        f"noise at 95% ({flagged / max(cells, 1):.1%}; 5% expected)"
    )
    print(f"({elapsed:.0f} s for {2 * (args.seeds + 1)} scored runs)")


def compare_self_test(runs: list[MarkerRecord]) -> tuple[int, int]:
    """Every marker of runs[1:] against runs[0] as /compare tests it (``MarkerRecord.estimate`` and
    ``core.noise.compare``, ``app.services.compare``): the cells flagged, and the cells compared."""
    flagged = cells = 0
    for spec in list_markers():
        base = runs[0].estimate(spec.name)
        for run in runs[1:]:
            other = run.estimate(spec.name)
            if base is None or other is None:
                continue
            cells += 1
            flagged += compare(base, other).significant
    return flagged, cells


if __name__ == "__main__":
    main()
