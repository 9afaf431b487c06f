"""Detection scoring: ROC, AUC, EER, AUC@FAR, CDR@FAR, bootstrap intervals, SemaFor metrics.

The choices of its options, here so the command line can offer them without importing the scorer.
"""

KINDS = ("manipulation", "splice", "eventverification", "camera")  # -t: the evaluation tasks
PLOT_KINDS = ("roc", "det")                                         # --plotType
LLR_BASE_NAMES = ("e", "10", "2")                                   # --llr-base
