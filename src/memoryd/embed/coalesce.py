"""Concurrent embed calls share model runs.

A model run costs a fixed overhead plus a little per text, so thirty requests
that each embed one memory cost far more run one by one than as one batch.
:class:`Coalescer` queues the texts of every caller; whichever caller finds
the model idle runs the next batch for everybody, and each caller returns as
soon as its own texts are done. Small calls (a search's query, one memory)
waiting together share a batch of their own; a bulk import's texts go in
batches without them, so a search waits for at most the batch already running.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

SMALL = 4  # texts left at most, for a call to count as small


class _Job:
    __slots__ = ("error", "next", "out", "texts")

    def __init__(self, texts: Sequence[str], dim: int) -> None:
        self.texts = texts
        self.next = 0  # texts before this one are taken by a batch
        self.out = np.zeros((len(texts), dim), dtype=np.float32)
        self.error: BaseException | None = None

    @property
    def left(self) -> int:
        return len(self.texts) - self.next


class Coalescer:
    """Runs ``run(texts) -> (len(texts), dim) array`` in batches of at most ``batch_size``
    texts drawn from every concurrent :meth:`embed` call. ``runs`` counts model runs."""

    def __init__(self, run: Callable[[list[str]], np.ndarray], dim: int, batch_size: int) -> None:
        self._run = run
        self._dim = dim
        self._batch_size = max(1, batch_size)
        self._turn = threading.Condition()
        self._jobs: list[_Job] = []  # jobs with texts not yet taken
        self._pending: dict[_Job, int] = {}  # texts taken but not yet embedded, per job
        self._busy = False
        self.runs = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        job = _Job(texts, self._dim)
        if not texts:
            return job.out
        with self._turn:
            self._jobs.append(job)
            self._pending[job] = 0
        while True:
            with self._turn:
                while self._busy and not self._finished(job):
                    self._turn.wait()
                if self._finished(job):
                    del self._pending[job]
                    if job.error is not None:
                        raise job.error
                    return job.out
                batch = self._take()  # the model is idle: this caller runs the next batch
                self._busy = True
            self._run_batch(batch)

    def _run_batch(self, batch: list[tuple[_Job, int, int]]) -> None:
        error: BaseException | None = None
        vectors = np.zeros((0, self._dim), dtype=np.float32)
        try:
            vectors = self._run([t for job, start, end in batch for t in job.texts[start:end]])
            self.runs += 1
        except BaseException as exc:  # every caller in the batch gets it, not only this one
            error = exc
        with self._turn:
            offset = 0
            for job, start, end in batch:
                if error is None:
                    job.out[start:end] = vectors[offset : offset + end - start]
                else:
                    job.error = error
                offset += end - start
                self._pending[job] -= end - start
            self._jobs = [j for j in self._jobs if j.error is None]
            self._busy = False
            self._turn.notify_all()

    def _finished(self, job: _Job) -> bool:
        return job.error is not None or (job.left == 0 and self._pending[job] == 0)

    def _take(self) -> list[tuple[_Job, int, int]]:
        """Up to ``batch_size`` texts, fewest-left callers first: (job, start, end) slices."""
        batch: list[tuple[_Job, int, int]] = []
        room = self._batch_size
        jobs = sorted(self._jobs, key=lambda j: j.left)
        small = [j for j in jobs if j.left <= SMALL]
        # small calls (a search, one memory) run together, never padded out with a bulk
        # import's texts: what they wait for is the batch already running, no more
        for job in small or jobs:
            if room == 0:
                break
            end = job.next + min(room, job.left)
            batch.append((job, job.next, end))
            self._pending[job] += end - job.next
            room -= end - job.next
            job.next = end
        self._jobs = [j for j in self._jobs if j.left]
        return batch
