"""Hybrid retrieval: candidates from both sides, fused, explained."""

from memoryd.search.hybrid import Candidate, fuse, hybrid_candidates

__all__ = ["Candidate", "fuse", "hybrid_candidates"]
