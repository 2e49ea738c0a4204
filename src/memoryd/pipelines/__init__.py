"""Pipelines: functions of (Memory, workspace, clock) that move memory along.

Each one can run once from the CLI or on a schedule inside ``memoryd serve``.
"""
