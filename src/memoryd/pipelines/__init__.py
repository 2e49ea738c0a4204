"""Pipelines: functions of (Memory, workspace, clock) that move memory along.

Each one can run once from the CLI (``memoryd run NAME``) or on a schedule
inside ``memoryd serve``, and each is safe to kill at any instant and run again.

Where things are:

* ``registry``: ``@pipeline(name, schedule=...)``, ``PipelineContext``, ``RunResult``
* ``runs``: running one under its lock, and the run records (``pipelines:runs``)
* ``scheduler``: APScheduler inside ``serve``, catch-up of missed runs
* ``status``: what ``memoryd pipelines`` and ``GET /v1/pipelines`` show
* ``diary``: diary capture (``POST /v1/diary``)
* ``digest``, ``sections``: new diary text -> short-term memory
* ``sync``: MEMORY.md -> long-term memory
* ``dream``, ``dreams_md``, ``rollback``: the nightly consolidation, its report, undo
* ``promote``: often-recalled memories -> MEMORY.md (recalls: ``memoryd.recall``)
* ``decay``, ``index_md``, ``lessons``, ...: TTL decay and lessons (seed 003)
"""
