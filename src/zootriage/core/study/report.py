"""Write a study's evidence: ``results.json`` (every number), ``report.md`` (tables) and one scatter
figure per outcome (``scatter_<outcome>.png``: a panel per marker, marker value vs outcome)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

KEY_MARKERS = ("dimension", "utilization", "participation_ratio", "id_accuracy")

# The paper's Table (Chou et al., ICLR 2026): per-setting Pearson r with OOD probe accuracy over 16
# architecture × optimiser settings (CIFAR-10 → CIFAR-100/ImageNet), and pooled over its 224 models.
PAPER = {
    "dimension": ("0.62 to 0.95", "0.94"),
    "utilization": ("0.62 to 0.94", "0.93"),
    "participation_ratio": ("0.20 to 0.94", "0.88"),
    "numerical_rank": ("0.30 to 0.89", "–"),
    "id_accuracy": ("−0.96 to 0.76", "0.48"),
    "nc1": ("−0.50 to 0.89", "–"),
}


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _with_ci(value: float | None, ci: list[float] | tuple[float, float] | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.2f}"


def _rate(rate: dict[str, Any]) -> str:
    if not rate["pairs"]:
        return "no pairs"
    return f"{rate['wins']:.0%} / {rate['losses']:.0%} / {rate['undecided']:.0%}"


def _marker_table(test: dict[str, Any], archs: list[str], names: list[str]) -> list[str]:
    head = [
        "marker",
        "pooled r [95% CI]",
        "pooled ρ [95% CI]",
        *(f"r {a}" for a in archs),
        "pick higher: win / lose / undecided",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        m = test["markers"][name]
        per_arch = [_num(m["by_architecture"][a]["pearson"]) for a in archs]
        row = [
            f"**{name}**" if name in KEY_MARKERS else name,
            _with_ci(m["pooled"]["pearson"], m["pooled"]["pearson_ci"]),
            _with_ci(m["pooled"]["spearman"], m["pooled"]["spearman_ci"]),
            *per_arch,
            _rate(m["pairwise"]),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _variant_table(entry: dict[str, Any], variants: list[list[str]], archs: list[str]) -> list[str]:
    head = [
        "GLUE variant",
        "r D_eff",
        "r Ψ_eff",
        "r capacity",
        *(f"r D_eff {a}" for a in archs),
        "geometry rule: win / lose / undecided",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    markers = entry["backtest"]["markers"]
    for d, c in variants:
        key = f"[{d},{c}]"
        dim, util, cap = (markers[f"{n}{key}"] for n in ("dimension", "utilization", "capacity"))
        row = [
            f"{d}, {c}",
            _num(dim["pooled"]["pearson"]),
            _num(util["pooled"]["pearson"]),
            _num(cap["pooled"]["pearson"]),
            *(_num(dim["by_architecture"][a]["pearson"]) for a in archs),
            _rate(entry["variant_rules"][f"{d},{c}"]),
        ]
        lines.append("| " + " | ".join(row) + " |")
    lines.append(
        f"| higher ID accuracy | | | | {'| ' * len(archs)}{_rate(entry['variant_rules']['id_accuracy'])} |"
    )
    return lines


def _paper_table(entry: dict[str, Any], archs: list[str]) -> list[str]:
    head = [
        "marker",
        "paper: per-setting r",
        "paper: pooled r",
        "ours: per-setting r (settings)",
        "ours: pooled r",
        *(f"ours: r {a}" for a in archs),
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    markers = entry["backtest"]["markers"]
    for name, (per_setting, pooled) in PAPER.items():
        m = markers.get(name)
        ours = [
            _num(m["pooled"]["pearson"]) if m else "–",
            *(_num(m["by_architecture"][a]["pearson"]) if m else "–" for a in archs),
        ]
        settings = [r for r in entry["by_setting"].get(name, {}).values() if r is not None]
        span = f"{min(settings):.2f} to {max(settings):.2f} ({len(settings)})" if settings else "–"
        lines.append("| " + " | ".join([name, per_setting, pooled, span, *ours]) + " |")
    return lines


def scatter(models: list[dict[str, Any]], outcome: str, names: list[str], path: Path) -> None:
    """One panel per marker: its value (x) against ``outcome`` (y), colour = architecture,
    shape = optimiser. A bare ``Figure`` (matplotlib imported here), so no backend is ever selected."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    kept = [m for m in models if m["kept"] and outcome in m["outcomes"]]
    archs = sorted({m["arch"] for m in kept})
    colours = {a: f"C{i}" for i, a in enumerate(archs)}
    shapes = {"sgd": "o", "adamw": "^"}
    cols = min(5, len(names))
    rows = math.ceil(len(names) / cols)
    fig = Figure(figsize=(3.2 * cols, 2.7 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        for m in kept:
            value = m["markers"].get(name)
            if value is not None:
                ax.scatter(
                    value,
                    m["outcomes"][outcome],
                    s=14,
                    c=colours[m["arch"]],
                    marker=shapes.get(m["optimizer"], "s"),
                    alpha=0.8,
                )
        ax.set_title(name, fontsize=8)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    handles = [Line2D([], [], color=colours[a], marker="o", ls="", label=a) for a in archs]
    handles += [Line2D([], [], color="grey", marker=s, ls="", label=o) for o, s in shapes.items()]
    fig.legend(handles=handles, loc="upper right", fontsize=7)
    fig.suptitle(f"marker (x) vs {outcome} accuracy (y)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.94, 0.97))
    fig.savefig(path, dpi=110)


def write_report(results: dict[str, Any], analysis: dict[str, Any], folder: Path, *, title: str) -> None:
    """Write results.json, report.md and the scatter figures into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps({**results, "analysis": analysis}, indent=2))
    config, models = results["config"], results["models"]
    kept = [m for m in models if m["kept"]]
    archs = sorted({m["arch"] for m in kept})
    lines = [
        f"# {title}",
        "",
        "## Zoo",
        "",
        f"{len(models)} models trained, {len(kept)} kept (train accuracy ≥ {config['train_acc_min']}, "
        f"ID test accuracy in {list(config['id_acc_band'])}).",
        "",
    ]
    for arch in sorted({m["arch"] for m in models}):
        ours = [m for m in kept if m["arch"] == arch]
        accs = [m["id_test_acc"] for m in ours]
        span = f"ID test accuracy {min(accs):.4f}–{max(accs):.4f}" if accs else "none kept"
        lines.append(f"- {arch}: {len(ours)} kept of {sum(m['arch'] == arch for m in models)}; {span}")
    dropped = [m for m in models if not m["kept"]]
    lines += [f"- dropped: {m['name']} ({m['dropped_because']})" for m in dropped]
    if results.get("probe"):
        probe = results["probe"]
        lines += [
            "",
            f"Probe regularisation C = {probe['c']:g}, chosen on a validation split of {probe['chosen_on']} "
            f"(validation accuracy by C: {probe['validation_accuracy']}).",
            f"Random-init probe accuracy (floor): {results['random_init_probe']}.",
        ]
        if probe["c"] in (min(config["c_grid"]), max(config["c_grid"])):
            lines.append("Caveat: the chosen C lies at the edge of the grid; a wider grid may probe better.")
    for outcome, entry in analysis.items():
        lines += ["", f"## Outcome: {outcome}", ""]
        if "skipped" in entry:
            lines.append(f"Not analysed: {entry['skipped']}")
            continue
        test = entry["backtest"]
        names = [n for n in test["markers"] if "[" not in n]
        lines += [
            "Pearson r and Spearman ρ with bootstrap 95% intervals; pairwise: over pairs of one "
            "architecture, how often picking the higher marker picks the better outcome.",
            "",
        ]
        lines += _marker_table(test, archs, names)
        lines += [
            "",
            "GLUE variants (geometry rule = pick the model whose D_eff and Ψ_eff are both higher):",
            "",
        ]
        lines += _variant_table(entry, config["variants"], archs)
        if outcome == "animal-mnist":
            lines += ["", "Beside the paper (its numbers: CIFAR-10 → CIFAR-100/ImageNet probes):", ""]
            lines += _paper_table(entry, archs)
        figure = f"scatter_{outcome}.png"
        scatter(models, outcome, names, folder / figure)
        lines += ["", f"![{outcome}]({figure})"]
    (folder / "report.md").write_text("\n".join(lines) + "\n")
