"""The pre-registered back-test (docs/study/PLAN.md): zoo, measurements, statistics, decision, report."""
