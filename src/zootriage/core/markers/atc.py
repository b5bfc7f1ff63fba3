"""Average Thresholded Confidence (ATC; Garg, Balakrishnan, Lipton, Neyshabur & Sedghi, ICLR 2022).

ATC predicts a classifier's accuracy on unlabelled target data from labelled source data: fit a
threshold t on a confidence score s so that the share of source points with s ≥ t equals the
source accuracy, then predict the target accuracy as the share of target points with s ≥ t. The
score is the negative softmax entropy (ATC-NE, the paper's recommended variant):

    s_i = −H(p_i) = Σ_c p_ic log p_ic,   p_i = softmax(z_i), computed through log-softmax.

``atc_predicted_accuracy`` is that prediction for a source and a target set that share the label
space (e.g. corruption shifts). A registered marker sees one labelled (ID) sample only, on which the
in-sample prediction is the accuracy itself by construction; the ``atc`` marker therefore
cross-fits: each half of the ID sample is predicted with the threshold fitted on the other half.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax

from zootriage.core.markers.registry import MarkerUndefined, register_marker


def negative_entropy(logits: np.ndarray) -> np.ndarray:
    """s_i = Σ_c p_ic log p_ic (≤ 0; 0 for a certain prediction), with log p = log-softmax(z), so
    large logits neither overflow nor round p log p to nan (p = 0 contributes 0)."""
    log_p = log_softmax(logits, axis=1)
    return np.sum(np.exp(log_p) * log_p, axis=1)


def atc_threshold(scores: np.ndarray, correct: np.ndarray) -> float:
    """The threshold t with #{i : s_i ≥ t} = #{i : correct} on the source data: with k errors among
    m points and s_(1) ≤ … ≤ s_(m), t = s_(k+1); −∞ when k = 0 and +∞ when k = m. Ties at t can only
    make the in-sample share above t larger than the accuracy."""
    m = scores.size
    if m == 0 or correct.shape != scores.shape:
        raise ValueError("ATC needs one correctness flag per score, and at least one score")
    errors = m - int(np.count_nonzero(correct))
    if errors == 0:
        return -np.inf
    if errors == m:
        return np.inf
    return float(np.sort(scores)[errors])


def atc_predicted_accuracy(
    source_logits: np.ndarray, source_labels: np.ndarray, target_logits: np.ndarray
) -> float:
    """ATC-NE's predicted target accuracy = (1/m) #{j : s_j ≥ t}, t = ``atc_threshold`` on the
    labelled source logits (labels = column indices), s the negative entropy of the target logits.
    Both logit sets must share the columns (the same classifier, the same label space)."""
    if source_logits.ndim != 2 or target_logits.ndim != 2 or source_logits.shape[1] != target_logits.shape[1]:
        raise ValueError("source and target logits must be 2-d with the same number of columns")
    correct = np.argmax(source_logits, axis=1) == source_labels
    threshold = atc_threshold(negative_entropy(source_logits), correct)
    return float(np.mean(negative_entropy(target_logits) >= threshold))


def _folds(labels: np.ndarray) -> np.ndarray:
    """Fold 0 or 1 per point: within each label, the points alternate in their order of appearance,
    so both halves keep the class proportions and the split needs no random numbers."""
    folds = np.empty(labels.size, dtype=np.int64)
    for value in np.unique(labels):
        where = np.flatnonzero(labels == value)
        folds[where] = np.arange(where.size) % 2
    return folds


@register_marker(
    needs=("logits", "labels"),
    higher_is_better=True,
    description="ATC-NE: accuracy predicted from thresholded confidence, cross-fitted on two ID halves",
    group="logit",
)
def atc(*, logits: np.ndarray, labels: np.ndarray) -> float:
    """Cross-fitted ATC-NE on the ID sample: with halves F₀, F₁ (``_folds``) and t_f the
    ``atc_threshold`` fitted on half f,

        ATC = (1/n) Σ_{f ∈ {0, 1}} #{i ∈ F_{1−f} : s_i ≥ t_f},   s = negative softmax entropy.

    It estimates the held-out accuracy from confidences alone; it differs from ``id_accuracy`` by
    how well confidence ranks right above wrong predictions (equal when every right prediction is
    more confident than every wrong one and both halves hold errors). Labels are logit columns.
    Undefined when a half is empty (fewer than 2 points).
    """
    folds = _folds(labels)
    if np.all(folds == 0):
        raise MarkerUndefined("cross-fitted ATC needs at least 2 points")
    scores = negative_entropy(logits)
    correct = np.argmax(logits, axis=1) == labels
    above = 0
    for fit in (0, 1):
        fitted, scored = folds == fit, folds != fit
        above += int(np.count_nonzero(scores[scored] >= atc_threshold(scores[fitted], correct[fitted])))
    return above / labels.size
