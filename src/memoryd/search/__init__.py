"""Retrieval: hybrid candidates and fusion, time decay, tiers, the shared pool."""

from memoryd.search.hybrid import Candidate, fuse, hybrid_candidates

__all__ = ["Candidate", "fuse", "hybrid_candidates"]
