"""Gymnasium environments over the simulator, one module per setting (``dl2``, ``deeprm``, …)."""
