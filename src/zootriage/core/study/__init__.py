"""The first back-test study (``zootriage study``, docs/study/): a zoo trained on MNIST, markers on ID
data against transfer out of it, and the back-test statistics shared with ``zootriage backtest`` and
``POST /v1/backtests``. The pre-registered second study is ``core.backtest``."""
