"""Logit baselines (docs/method.md, "The markers").

z is (n, C) logits, p = softmax(z); labels, where needed, are column indices of z. Predictions are
argmax z with ties going to the lowest column index (numpy's argmax). Everything is computed from
log-softmax, i.e. through logsumexp, so large logits neither overflow nor saturate.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from scipy.stats import rankdata

from zootriage.core.markers.registry import MarkerUndefined, register_marker

ENTROPY_EPS = 1e-12


def _log_max_softmax(logits: np.ndarray) -> np.ndarray:
    """log max_c p_c = −log1p(Σ_{c≠ĉ} exp(z_c − z_ĉ)), ĉ = argmax: exact even where max p rounds to 1
    (max z − logsumexp z would cancel to 0 there)."""
    rows = np.arange(logits.shape[0])
    top = np.argmax(logits, axis=1)
    others = np.exp(logits - logits[rows, top][:, None])
    others[rows, top] = 0.0
    return -np.log1p(others.sum(axis=1))


@register_marker(
    needs=("logits", "labels"),
    higher_is_better=True,
    description="Top-1 accuracy on the ID samples",
    group="logit",
)
def id_accuracy(*, logits: np.ndarray, labels: np.ndarray) -> float:
    """acc = (1/n) #{i : argmax_c z_ic = y_i}."""
    return float(np.mean(np.argmax(logits, axis=1) == labels))


@register_marker(
    needs=("logits", "labels"),
    higher_is_better=True,
    description="ROC AUC of the max softmax probability as a detector of correct predictions",
    group="logit",
)
def confidence_auroc(*, logits: np.ndarray, labels: np.ndarray) -> float:
    """AUROC = P(conf_i > conf_j) + ½ P(conf_i = conf_j), i correct, j wrong (Mann–Whitney U / n₊n₋).

    With average ranks r of the confidences: AUROC = (Σ_{i correct} r_i − n₊(n₊+1)/2) / (n₊ n₋).
    Ranked on log max p, which orders like max p but keeps its resolution near 1.
    Undefined when every prediction is right or every one is wrong.
    """
    correct = np.argmax(logits, axis=1) == labels
    n_pos = int(np.count_nonzero(correct))
    n_neg = correct.size - n_pos
    if n_pos == 0 or n_neg == 0:
        kind = "right" if n_neg == 0 else "wrong"
        raise MarkerUndefined(f"confidence AUROC is undefined: every prediction is {kind}")
    ranks = rankdata(_log_max_softmax(logits))
    return float((ranks[correct].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@register_marker(
    needs=("logits",),
    higher_is_better=None,
    description="Mean max softmax probability",
    group="logit",
)
def mean_confidence(*, logits: np.ndarray) -> float:
    """(1/n) Σ_i max_c p_ic."""
    return float(np.mean(np.exp(_log_max_softmax(logits))))


@register_marker(
    needs=("logits",),
    higher_is_better=None,
    description="Mean softmax entropy (nats)",
    group="logit",
)
def entropy(*, logits: np.ndarray) -> float:
    """(1/n) Σ_i −Σ_c p_ic log(p_ic + 1e−12)."""
    p = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    return float(np.mean(-np.sum(p * np.log(p + ENTROPY_EPS), axis=1)))


@register_marker(
    needs=("logits", "labels"),
    higher_is_better=None,
    description="Mean gap between the true-class logit and the largest other logit",
    group="logit",
)
def logit_margin(*, logits: np.ndarray, labels: np.ndarray) -> float:
    """(1/n) Σ_i (z_{i,y_i} − max_{c≠y_i} z_ic). Undefined with a single logit column."""
    if logits.shape[1] < 2:
        raise MarkerUndefined("logit margin needs at least 2 logit columns")
    rows = np.arange(logits.shape[0])
    true = logits[rows, labels]
    others = logits.copy()
    others[rows, labels] = -np.inf
    return float(np.mean(true - others.max(axis=1)))


@register_marker(
    needs=("logits",),
    higher_is_better=None,
    description="Mean free energy −logsumexp(z)",
    group="logit",
)
def energy(*, logits: np.ndarray) -> float:
    """(1/n) Σ_i −log Σ_c exp(z_ic)  (Liu et al., NeurIPS 2020, temperature 1)."""
    return float(np.mean(-logsumexp(logits, axis=1)))
