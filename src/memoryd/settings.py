"""One typed settings object.

Sources, strongest first: constructor arguments, ``MEMORYD_*`` environment
variables (nested with ``__``, e.g. ``MEMORYD_SEARCH__VECTOR_WEIGHT=0.6``), the
TOML file named by ``MEMORYD_CONFIG`` or ``memoryd.toml`` in the working
directory or in ``MEMORYD_HOME``, then defaults. Each backend owns its section.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


def default_home() -> Path:
    return Path(os.environ.get("MEMORYD_HOME", "~/.memoryd")).expanduser()


class PostgresStoreSettings(BaseModel):
    """PostgreSQL + pgvector (``store.url = postgresql://...``). Tables live in
    their own schema, so memoryd can share a database with other programs."""

    db_schema: str = Field(default="memoryd", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    pool_min: int = Field(default=1, ge=0)
    pool_max: int = Field(default=10, ge=1)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    hnsw_m: int = Field(default=16, ge=2, le=100)
    # 200, not pgvector's 64: a big user's filtered search walks a better graph (top-10
    # agreement with an exact scan 0.976 -> 0.994 on a 40k test table at ef_search 100),
    # for a slower index build; existing indexes keep what they were built with
    hnsw_ef_construction: int = Field(default=200, ge=4, le=1000)
    # the graph walk's width (raised to the limit when smaller); only scopes of at least
    # exact_scan_below memories walk it. A user of 100k in a 1M-memory database (10% of the
    # graph, iterative scan), top-10 agreement with an exact scan / query p50, quiet
    # machine: 100 0.80 / 29 ms, 400 0.94 / 20 ms, 800 0.98 / 25 ms, 1000 0.99 / 36 ms
    # (the exact scan: 310 ms; bench/README.md, team.py)
    ef_search: int = Field(default=800, ge=1, le=1000)
    # a vector search whose scope (user/agent/run/state) holds fewer memories than this
    # scans them exactly instead of walking the HNSW graph: exact recall, and a cost
    # that follows the scope's size (~3 us a memory on two busy cores; 0: always the graph)
    exact_scan_below: int = Field(default=4_000, ge=0)
    # a user with at least this many memories gets an HNSW graph of their own: a partial
    # index WHERE user_id = '<user>' (CREATE INDEX CONCURRENTLY, in the background, started
    # by the first search that finds it missing, or by PostgresStore.index_large_scopes()),
    # so their walk covers their vectors only, not the whole database's graph. The user of
    # 100k in 1M memories: agreement 0.98 / p50 25 ms (shared graph, ef_search 800) ->
    # 0.997 / 3.5 ms (own graph, ef_search 200). Each costs a build (~145 s for 100k on two
    # busy cores) and index upkeep on that user's writes only; 0: never
    scope_index_above: int = Field(default=10_000, ge=0)
    # the walk's width in a user's own graph: it holds only their vectors, so a narrower
    # walk finds their nearest (100k user: 100 0.963, 200 0.997, 400 1.0 agreement)
    scope_ef_search: int = Field(default=200, ge=1, le=1000)
    # a user's keyword postings of one term, once there are more than this many rows of
    # them, are packed into blocks of 256 (in the background, started by the search that
    # reads them, or by bulk_load): a search reads a block ~5x faster than its rows. The
    # 16,000 postings of a query's words in a user of 100k: 7 ms as rows (store/pg_postings.py);
    # 0: never pack
    pack_postings_above: int = Field(default=1024, ge=0)
    index_build_memory: str = Field(default="512MB", pattern=r"^\d+(kB|MB|GB)$")  # bulk_load


class StoreSettings(BaseModel):
    """``url`` picks the backend: a file path or ``sqlite:///path`` for SQLite
    (the default, under ``home``), ``postgresql://...`` for PostgreSQL."""

    url: str = ""
    busy_timeout_ms: int = 30_000
    # SQLite change-log entries kept for other processes to catch up from; one that falls
    # further behind reloads its search index in full. Pruned once twice this is held.
    changes_kept: int = Field(default=10_000, ge=10)
    # A store of at least this many memories keeps its search index in ``<file>.index``
    # (memoryd.store.snapshot), so a process starts without re-indexing; 0 turns it off.
    index_snapshot_min_rows: int = Field(default=10_000, ge=0)
    postgres: PostgresStoreSettings = Field(default_factory=PostgresStoreSettings)


class OnnxEmbedSettings(BaseModel):
    """A local ONNX sentence-embedding model. ``model_dir`` holds ``*.onnx`` and
    ``tokenizer.json``; empty means the bundled int8 all-MiniLM-L6-v2."""

    model_dir: Path | None = None
    model_name: str | None = None
    pooling: Literal["mean", "cls"] = "mean"
    max_tokens: int = 256
    batch_size: int = 32
    threads: int = 0  # 0: onnxruntime decides
    # onnxruntime's threads busy-wait after each run for the next one; on a few cores that
    # takes the CPU from the rest of a search (SQLite's scoring, PostgreSQL's backend):
    # hybrid p50 under_100/1k users 12/28 -> 10/24 ms on PostgreSQL (bench/team.py)
    spin: bool = False
    # where the optimised graph is cached (embed/onnx.py); unset: $XDG_CACHE_HOME/memoryd/onnx
    # when XDG_CACHE_HOME is set, else $MEMORYD_HOME/cache/onnx (`memoryd cache clean`)
    cache_dir: Path | None = None


class OpenAIEmbedSettings(BaseModel):
    """Any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama, vLLM)."""

    base_url: str = "http://127.0.0.1:11434/v1"
    api_key: SecretStr = SecretStr("")
    model: str = "nomic-embed-text"
    dim: int | None = None  # learned from the first answer when not set
    max_tokens: int = 512
    batch_size: int = 64
    timeout_s: float = 30.0


class EmbedSettings(BaseModel):
    provider: str = "onnx"
    onnx: OnnxEmbedSettings = Field(default_factory=OnnxEmbedSettings)
    openai: OpenAIEmbedSettings = Field(default_factory=OpenAIEmbedSettings)


class SearchSettings(BaseModel):
    # 0.6/0.4 beat OpenClaw's 0.7/0.3 on LoCoMo conversations 0-4 once BM25 ran on
    # stopword-free queries (evidence recall@10 0.726 -> 0.739, with entity_boost 0.1)
    vector_weight: float = 0.6
    keyword_weight: float = 0.4
    # a keyword match counts in full only beside some meaning: a hybrid candidate's keyword
    # score is scaled by min(1, vector / keyword_meaning_floor). A window of code or a long
    # explanation shares words with any question ("project", "test", "team") at cosine ~0.
    # Agent chats (tune half) by floor: 0 0.891, 0.1 0.902, 0.2 0.907, 0.3 0.909; LoCoMo
    # 0.783 with 0.2 and without (at 0.7/0.3 weights; bench/README.md, issue 35). Off (0)
    # by default: a lookup of an exact token (an error code, a ticket id) is what the
    # keyword side is for, MiniLM gives such tokens little meaning, and only chats were
    # measured
    keyword_meaning_floor: float = Field(default=0.0, ge=0.0, le=1.0)
    fusion: Literal["weighted", "rrf"] = "weighted"
    rrf_k: int = 60
    candidate_multiplier: int = 4
    # candidates per side (and turns re-ranked) for a small top_k: with 20, a top_k 10
    # search ranked its first ten from 40 candidates and found less than the first ten of a
    # top_k 25 search (LoCoMo messages R@10 0.780 vs 0.798, REALTALK 0.583 vs 0.588). With
    # 100, every top_k up to 25 ranks its first hits as top_k 25 does (mean R@10 of the two
    # tune halves at top_k 10: 20 0.7030, 100 0.7135, 200 0.7162), for +3.6 ms p50 at 100k
    # memories (7.6 -> 11.3; 200: 23.9, a wider graph walk and BLAS threads; bench/README.md)
    min_candidates: int = Field(default=100, ge=1)
    default_top_k: int = 5
    max_top_k: int = 100
    # relevance floor (compared with the fused relevance, never with recency): a memory that
    # shares no word and no meaning with the query scores ~0 and would otherwise be carried
    # into the results by recency alone. On LoCoMo every evidence turn in the top 25 has
    # relevance >= 0.1 (99.8% >= 0.2); on agent chats a short statement answering a long
    # question often scores 0.1-0.2 ("We now depend on rich too" for "Which libraries has
    # the user added?"): 0.2 cut agentchat R@10 0.900 -> 0.857, LoCoMo the same at both
    min_score: float = 0.1
    # added to a hit whose metadata names a speaker/person the query mentions by name
    # (tuned on LoCoMo conversations 0-4 with the turn prior below: 0.1 0.802, 0.15 0.807
    # evidence recall@10; more costs questions about the *other* person; 0 turns it off)
    entity_boost: float = 0.15
    # added to a conversation turn: this x the best score among the turns within two of it
    # in the same conversation (LoCoMo messages path: evidence recall@10 0.746 -> 0.762,
    # held-out conversations 0.723 -> 0.743; 0 turns it off)
    neighbour_boost: float = Field(default=0.2, ge=0.0, le=1.0)
    # a turn's neighbour lift counts in full only beside some meaning of its own: scaled by
    # min(1, vector / neighbour_meaning_floor). A window of code or tool output next to a
    # matching turn (cosine ~0 to the query) was lifted over a short statement that answers
    # it ("We now depend on rich too" for "Which libraries has the user added?"). R@10 tune /
    # held-out, in-process (bench/turns_inproc.py), 0 -> 0.25: agentchat seed 35 0.924 /
    # 0.954 -> 0.946 / 0.954 (plain MiniLM 0.931 / 0.883), seed 36 0.956 / 0.943 -> 0.963 /
    # 0.948, seed 37 0.950 / 0.909 -> 0.954 / 0.924; LoCoMo 0.812 / 0.779 -> 0.812 / 0.778,
    # REALTALK 0.611 / 0.556 -> 0.611 / 0.557 (0.1: seed 35 0.935 / 0.954, LoCoMo and
    # REALTALK as at 0; 0.4: seeds 36 and 37 as at 0.25 but seed 36 held-out 0.943; 0 turns
    # it off)
    neighbour_meaning_floor: float = Field(default=0.25, ge=0.0, le=1.0)
    # what a conversation turn says (memoryd.search.turns): a turn shorter than
    # full_turn_words loses up to short_turn_penalty (log scale), a question loses
    # question_turn_penalty; facts and notes are never lowered (0 turns them off)
    short_turn_penalty: float = Field(default=0.3, ge=0.0, le=1.0)
    full_turn_words: int = Field(default=50, ge=2, le=10_000)
    question_turn_penalty: float = Field(default=0.05, ge=0.0, le=1.0)
    # a turn longer than long_turn_words (a window of an assistant's explanation, code, tool
    # output) keeps its keyword score in full only beside some meaning: scaled by
    # min(1, vector / long_turn_meaning_floor), as keyword_meaning_floor does for every
    # candidate; short turns, facts and notes keep theirs (0 turns it off). R@10 by floor,
    # tune halves (held-out), in-process (bench/turns_inproc.py, issue 35): agent chats
    # 0 0.891 (0.909), 0.2 0.902 (0.920), 0.25 0.902 (0.931), 0.4 0.913 (0.931); REALTALK 0 0.612
    # (0.559), 0.2 0.611 (0.559), 0.25 0.611 (0.556), 0.4 0.601 (0.559); LoCoMo 0.812
    # (0.779) at 0, 0.2 and 0.4
    long_turn_words: int = Field(default=60, ge=1, le=10_000)
    long_turn_meaning_floor: float = Field(default=0.25, ge=0.0, le=1.0)
    # added to a turn that states a time ("yesterday", "last May") when the query asks when
    # (chosen on the tune halves of LoCoMo and REALTALK: bench/README.md, "when-questions")
    when_turn_boost: float = Field(default=0.1, ge=0.0, le=1.0)
    # added to a turn that is an instruction or a preference ("always use type hints", "I
    # prefer polars") when the query asks how the user wants something done ("How should I
    # format my answers?"); such turns never lose the short-turn or question penalty.
    # Agent chats (bench/dataset_agentchat.py) R@10, tune half: 0 0.774, 0.05 0.796, 0.1
    # 0.796, 0.15-0.3 0.841; LoCoMo unchanged (0.796 at every value). With it on, such a
    # query also ranks every other turn by meaning alone (turns.topic_cut); and a candidate
    # whose meaning alone reaches min_score passes it (Memory.search). Both: agentchat seed 36
    # R@10 0.893 -> 0.949 (preference 0.833 -> 0.983; vector-only 0.922), seed 35 0.917 -> 0.939
    directive_turn_boost: float = Field(default=0.15, ge=0.0, le=1.0)
    # newer evidence first (memoryd.search.current): among the hits returned, a newer hit
    # that is this close in meaning to an older one, scores at most newer_first_margin
    # below it and is not told apart by its words moves above it (1.0 turns it off)
    newer_first_similarity: float = Field(default=0.45, ge=0.0, le=1.0)
    newer_first_margin: float = Field(default=0.25, ge=0.0, le=1.0)
    newer_first_gap_hours: float = Field(default=1.0, ge=0.0)
    # only the first this many hits are reordered, so which ten come first never depends on
    # top_k (deeper, it cost LoCoMo messages-path R@10 0.796 -> 0.730)
    newer_first_window: int = Field(default=10, ge=2, le=100)
    # among those hits, one that states an attribute the query asks about ("who is on
    # call?": the on-call) moves above hits that state only other attributes (an owner)
    # scoring at most this much more (memoryd.search.current.asked_attribute_first; 0: off)
    asked_attribute_margin: float = Field(default=0.1, ge=0.0, le=1.0)
    # and before that, a hit that states something moves above the questions, one-off
    # requests and chit-chat right before it ("Remind me what to pack for the gym.", "Such
    # a sunny day, ...") scoring at most this much more (search.current.stating_first; 0:
    # off)
    stating_first_margin: float = Field(default=0.1, ge=0.0, le=1.0)
    # time decay (seed 000): score = w_sim * relevance + w_recency * 0.5 ** (age_days / half_life)
    time_decay: bool = True
    decay_similarity_weight: float = 0.7
    decay_recency_weight: float = 0.3
    decay_half_life_days: float = 30.0
    # categories every agent of the same user sees in search (memory_type "shared")
    shared_categories: list[str] = Field(default_factory=lambda: ["experience", "procedural"])
    recent_days: int = 7  # short-term window of search_combined

    @field_validator("vector_weight", "keyword_weight")
    @classmethod
    def _weight_in_range(cls, v: float) -> float:
        if not 0.0 <= v <= 1.0:
            raise ValueError("weights must be between 0 and 1")
        return v


class LimitSettings(BaseModel):
    max_text_chars: int = 20_000
    max_metadata_bytes: int = 16_384
    max_metadata_depth: int = 8
    max_id_chars: int = 128
    max_texts: int = Field(default=1_000, ge=1)  # per add with texts: one model run, one write
    max_messages: int = Field(default=1_000, ge=1)  # per request with messages (413 above)
    # HTTP edge (memoryd.api.limits): bigger bodies get 413 before they are parsed
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    rate_limit_per_minute: int = Field(default=0, ge=0)  # per API key; 0: no rate limit
    rate_limit_burst: int | None = Field(default=None, ge=1)  # default: one minute's worth
    # refused keys (401) per client address and minute before that address gets 429
    # (key guessing); a keyed server only, 0: off
    failed_auth_per_minute: int = Field(default=10, ge=0)


class OpenAILLMSettings(BaseModel):
    """Any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, Ollama, vLLM)."""

    base_url: str = "http://127.0.0.1:11434/v1"
    api_key: SecretStr = SecretStr("")
    model: str = "llama3.1"
    temperature: float = 0.0
    max_tokens: int = 2000
    timeout_s: float = 60.0
    retries: int = 1  # extra attempts after a timeout, a connection error or a 5xx
    json_mode: bool = True  # send response_format={"type": "json_object"}


class AnthropicLLMSettings(BaseModel):
    """Anthropic's Messages API over plain HTTP (no SDK)."""

    base_url: str = "https://api.anthropic.com"
    api_key: SecretStr = SecretStr("")
    model: str = "claude-3-5-haiku-latest"
    version: str = "2023-06-01"
    temperature: float = 0.0
    max_tokens: int = 2000
    timeout_s: float = 60.0
    retries: int = 1


class BedrockLLMSettings(BaseModel):
    """AWS Bedrock's Converse API through boto3 (``pip install 'memoryd[bedrock]'``).
    Credentials come from the usual AWS chain (env, profile, instance role)."""

    region: str = "us-east-1"
    model_id: str = "anthropic.claude-3-haiku-20240307-v1:0"
    profile: str | None = None
    endpoint_url: str | None = None
    temperature: float = 0.0
    max_tokens: int = 2000
    timeout_s: float = 60.0
    retries: int = 1


class LLMSettings(BaseModel):
    """``provider``: ``none`` (offline extraction), ``openai``, ``anthropic`` or ``bedrock``."""

    provider: str = "none"
    openai: OpenAILLMSettings = Field(default_factory=OpenAILLMSettings)
    anthropic: AnthropicLLMSettings = Field(default_factory=AnthropicLLMSettings)
    bedrock: BedrockLLMSettings = Field(default_factory=BedrockLLMSettings)


class ExtractSettings(BaseModel):
    """Fact extraction and reconciliation for ``infer=true`` adds."""

    max_input_chars: int = 200_000  # text sent for extraction (facts obey limits.max_text_chars)
    max_facts: int = 100
    candidates_per_fact: int = 5  # similar memories compared with each new fact
    llm_min_similarity: float = 0.3  # weaker candidates are not shown to the LLM
    # offline reconciliation (extract/claims.py decides from the words; cosine similarity of
    # fact and memory only picks which memories are compared)
    supersede_similarity: float = 0.35  # memories at least this similar are compared; a
    # change naming its subject more fully can be far in meaning ("From now on the repeat
    # prescription goes to Superdrug" / "My prescriptions go to Well Pharmacy ...": 0.45)
    none_similarity: float = 0.95  # at or above, a rewording with no new value: NONE
    # a change said in other words can be far from the old fact in meaning ("Chidi took
    # over the ingestion pipelines" / "Ask Leo about ingestion": cosine 0.29): the memories
    # sharing its words are compared too, and one below supersede_similarity is superseded
    # only when both name one attribute (owner, port, ...) or the fact names its value as
    # the one replaced
    keyword_candidates: int = 5
    linked_similarity: float = 0.2
    # superseded facts close to a new fact: the current value of each one's chain is
    # compared too, through the older value, which may name the attribute where the
    # current one does not (0: off)
    superseded_candidates: int = 3
    # an extracted fact given no category is classed personal / tasks / agents / system by
    # word rules (seed 003; extract/classify.py), which sets how long it lives (decay)
    classify: bool = True


class AuditSettings(BaseModel):
    """JSON lines under ``$MEMORYD_HOME/audit/``, rotated by size."""

    enabled: bool = True
    max_bytes: int = 10_000_000
    backups: int = 5


class ApiKey(BaseModel):
    """One API key. ``users``/``agents`` empty means any; ``admin`` may reset and see audit."""

    name: str
    key: SecretStr
    admin: bool = False
    users: list[str] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list)


class AuthSettings(BaseModel):
    """No keys: the server is open and refuses to bind beyond loopback unless
    ``server.allow_remote_without_auth`` is set."""

    keys: list[ApiKey] = Field(default_factory=list)


class ServerSettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = 8230
    allow_remote_without_auth: bool = False
    max_concurrent_adds: int = 8  # adds beyond this wait, so reads always find a worker thread
    # requests without an API key must name one of these hosts (besides the loopback names
    # and ``host``): a DNS-rebinding page names its own; "*" turns the check off
    allowed_hosts: list[str] = Field(default_factory=list)
    # web origins that may call memoryd from a browser (CORS); none by default
    cors_origins: list[str] = Field(default_factory=list)


def openclaw_state_dir(env: dict[str, str] | None = None) -> Path:
    """Where OpenClaw keeps its state, by its own rules: ``$OPENCLAW_STATE_DIR``, else
    ``~/.openclaw-<profile>`` for ``$OPENCLAW_PROFILE`` (``--profile``), else ``~/.openclaw``."""
    env = dict(os.environ) if env is None else env
    explicit = (env.get("OPENCLAW_STATE_DIR") or "").strip()
    if explicit:
        return Path(explicit).expanduser()
    profile = (env.get("OPENCLAW_PROFILE") or "").strip()
    suffix = f"-{profile}" if profile and profile.lower() != "default" else ""
    return Path(f"~/.openclaw{suffix}")


class WorkspaceSettings(BaseModel):
    """The agents' Markdown workspaces (OpenClaw layout), owned by ``memoryd.workspace``.

    An agent's workspace is ``agents[agent_id]`` when configured, else
    ``{openclaw_dir}/workspace-{agent_id}`` when that directory exists (so an
    existing OpenClaw install is picked up as is), else ``$MEMORYD_HOME/workspaces/{agent_id}``.
    """

    agents: dict[str, Path] = Field(default_factory=dict)  # agent id -> workspace path
    # OpenClaw's state directory, found as OpenClaw finds it (openclaw_state_dir)
    openclaw_dir: Path = Field(default_factory=lambda: openclaw_state_dir())
    extra_paths: list[Path] = Field(default_factory=list)  # relative to each workspace, or absolute
    # folders outside the workspaces that symlinks in a workspace may lead to (read and
    # written through); any other symlink out is refused (memoryd.workspace.safefs)
    allowed_roots: list[Path] = Field(default_factory=list)
    user_id: str = "default"  # the user that owns workspace chunks
    timezone: str = "UTC"  # which day "today" is for diaries and session notes
    chunk_tokens: int = Field(default=400, ge=32)  # capped by the embedder's window
    chunk_overlap: int = Field(default=80, ge=0)
    max_file_bytes: int = 2_000_000  # bigger files are skipped with a logged reason
    watch: bool = True  # `serve` re-indexes changed files
    debounce_ms: int = 300  # quiet time before a burst of file changes is indexed
    # memory_search: hits until ``result_tokens`` of returned text (OpenClaw's 6 hits of
    # ~700 characters cost about that), at most ``max_results``. min_score is 0.2, not
    # OpenClaw's 0.35: that is for OpenClaw's own score scale, and on ours it dropped
    # evidence (LoCoMo diary path recall@10 0.793 with 0.2, 0.774); workspace chunks are
    # notes and diary lines, not agent chats' short turns (search.min_score, 0.1)
    max_results: int = Field(default=50, ge=1, le=100)
    result_tokens: int = Field(default=1000, ge=1)
    min_score: float = Field(default=0.2, ge=0.0, le=1.0)
    mmr: bool = False  # maximal marginal relevance re-ranking of workspace hits
    mmr_lambda: float = Field(default=0.7, ge=0.0, le=1.0)
    snippet_chars: int = 700
    context_chars: int = 20_000  # session-start context budget
    session_messages: int = 15  # messages kept by POST /v1/sessions/end

    @field_validator("agents", mode="after")
    @classmethod
    def _expand_agents(cls, v: dict[str, Path]) -> dict[str, Path]:
        return {k: p.expanduser() for k, p in v.items()}

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, v: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {v!r}; use an IANA name like Europe/Lisbon"
            ) from None
        return v


class McpSettings(BaseModel):
    """The scope MCP tools act in. ``memoryd mcp`` (stdio) always uses it; over HTTP
    (``/mcp``) the API key's users/agents narrow it, and the ``X-Memoryd-User`` /
    ``X-Memoryd-Agent`` headers pick within the key's scope. Never a tool argument."""

    user_id: str = "default"
    agent_id: str | None = None


class DiarySettings(BaseModel):
    """Diary capture (``POST /v1/diary``): what counts as noise, how much is kept."""

    min_chars: int = 16  # a turn with less conversation text than this is dropped
    max_message_chars: int = 4_000  # longer messages keep head and tail
    max_block_lines: int = 40  # longer code/tool-output blocks keep head and tail
    max_messages: int = 200  # per request: send one turn, not the whole session
    remember_turns: int = 500  # turn ids remembered per agent and day against retries


_DEFAULT_TTL_DAYS: dict[str, float | None] = {
    "personal": None,
    "system": None,
    "knowledge": None,
    "tasks": 7.0,
    "agents": 30.0,
}
_DEFAULT_DECAY_CLASSES = {
    **dict.fromkeys(
        ("preference", "preferences", "personal", "profile", "contact", "relationship"),
        "personal",
    ),
    **dict.fromkeys(("environment", "system", "config", "infrastructure"), "system"),
    **dict.fromkeys(("decision", "experience", "procedural", "lesson"), "knowledge"),
    **dict.fromkeys(("task", "tasks", "todo", "short_term", "progress"), "tasks"),
    **dict.fromkeys(("agent", "agents", "project", "event", "conversation", "note"), "agents"),
}


class DecaySettings(BaseModel):
    """TTL decay (``memoryd run decay``, seed 003's organizer), owned by
    :mod:`memoryd.pipelines.decay`.

    Each memory category belongs to a TTL class (``classes``); a class's TTL is in
    ``ttl_days`` (``inf``, or ``null`` in JSON: never expires). Both are merged over
    the defaults, so ``[decay.classes] ticket = "tasks"`` adds one mapping. A memory
    not written for its class's TTL is summarised into a lesson and archived: out of
    default search, still found with ``--include-archived``, never deleted.
    Categories not listed fall into ``default_class``, which never expires by
    default: decay only touches what is known to be transient.
    """

    ttl_days: dict[str, float | None] = Field(default_factory=lambda: dict(_DEFAULT_TTL_DAYS))
    classes: dict[str, str] = Field(default_factory=lambda: dict(_DEFAULT_DECAY_CLASSES))
    default_class: str = "personal"
    include_short_term: bool = False  # short-term memories (run_id set) are the dream's job
    max_group: int = Field(default=40, ge=1, le=200)  # expired memories summarised together
    lessons_per_group: int = Field(default=3, ge=1, le=20)
    default_agent: str = "main"  # workspace for lessons of memories without an agent
    index_max_bytes: int = Field(default=2048, ge=256)  # memory/INDEX.md budget
    index_recent: int = Field(default=8, ge=0, le=100)  # newest memories listed in INDEX.md

    @field_validator("ttl_days", "classes", mode="before")
    @classmethod
    def _over_the_defaults(cls, v: object, info: ValidationInfo) -> object:
        if not isinstance(v, dict):
            return v  # pydantic says what is wrong with it
        defaults = _DEFAULT_TTL_DAYS if info.field_name == "ttl_days" else _DEFAULT_DECAY_CLASSES
        return {**defaults, **v}

    @field_validator("ttl_days", mode="after")
    @classmethod
    def _inf_is_never(cls, v: dict[str, float | None]) -> dict[str, float | None]:
        # TOML has no null: `tasks = inf` says "never expires" there
        return {k: None if d == float("inf") else d for k, d in v.items()}

    @model_validator(mode="after")
    def _classes_have_ttls(self) -> DecaySettings:
        unknown = sorted({*self.classes.values(), self.default_class} - set(self.ttl_days))
        if unknown:
            raise ValueError(
                f"decay classes {unknown} have no entry in decay.ttl_days; "
                f"add them (inf or null: never expires) or map the categories to "
                f"{sorted(self.ttl_days)}"
            )
        bad = sorted(k for k, v in self.ttl_days.items() if v is not None and v <= 0)
        if bad:
            raise ValueError(f"decay.ttl_days for {bad} must be positive days, or inf (never)")
        return self


class LessonsSettings(BaseModel):
    """Lessons from session logs (``memoryd run lessons``), owned by
    :mod:`memoryd.pipelines.lessons`: failure -> retry -> success sequences in the
    agents' OpenClaw session transcripts (``<sessionId>.jsonl``)."""

    # where an agent's transcripts are; {openclaw_dir}, {home} and {agent} are filled in
    sessions_dir: str = "{openclaw_dir}/agents/{agent}/sessions"
    sessions: dict[str, Path] = Field(default_factory=dict)  # agent id -> sessions dir
    retry_window: int = Field(default=6, ge=1, le=50)  # tool calls a failure waits for its retry
    overlap_threshold: float = Field(default=0.7, ge=0.0, le=1.0)  # word overlap = duplicate
    llm_check_candidates: int = Field(default=3, ge=0, le=10)  # lessons shown to the LLM check
    max_bytes_per_run: int = Field(default=20_000_000, ge=1024)  # per transcript and run


class PipelineSettings(BaseModel):
    """The scheduler inside ``memoryd serve`` and the run registry, owned by
    :mod:`memoryd.pipelines` (see ``memoryd pipelines``).

    Each pipeline runs on its registered crontab (digest ``*/15 * * * *``, sync
    ``0 1 * * *``, dream ``0 2 * * *``, promote ``0 3 * * *``) in ``timezone``;
    ``schedules`` overrides one (``{"dream": "30 4 * * *"}``), ``disabled`` keeps
    one out of ``serve`` (``memoryd run`` still runs it).
    """

    scheduler: bool = True  # run pipelines inside `memoryd serve`
    timezone: str = "UTC"
    schedules: dict[str, str] = Field(default_factory=dict)  # pipeline -> 5-field crontab
    disabled: list[str] = Field(default_factory=list)
    catch_up: bool = True  # a run missed while no server was up runs once at start
    # run locks die with their process (an SQLite file's flock, PostgreSQL's session);
    # only an in-memory store's lease row waits this long after a crash
    lock_ttl_s: float = Field(default=3600.0, gt=0)
    keep_runs: int = Field(default=500, ge=10)  # run records kept in kv "pipelines:runs"

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, v: str) -> str:
        return WorkspaceSettings._known_timezone(v)


class DigestSettings(BaseModel):
    """The 15-minute digest (``memoryd run digest``): new diary bytes -> short-term."""

    min_bytes: int = Field(default=500, ge=0)  # less new text waits (seed 000: 500 bytes)
    max_batch_bytes: int = Field(default=50_000, ge=1_000)  # section-aligned batches (seed 001)
    settle_minutes: float = Field(default=2.0, ge=0)  # the last section waits this long
    task_pass: bool = True  # second extraction with the task prompt -> category=task
    # seed 001's rate control: seconds to wait between two batches (LLM calls) of a run; 0: none
    batch_pause_s: float = Field(default=0.5, ge=0)


class DreamSettings(BaseModel):
    """The nightly dream (``memoryd run dream``): diary -> long-term, old short-term
    consolidated into long-term."""

    short_term_days: int = Field(default=7, ge=1)  # older short-term memories are consolidated
    max_catch_up_days: int = Field(default=7, ge=1)  # diary days step 1 catches up at most
    loss_guard: float = Field(default=0.25, ge=0, le=1)  # abort if long-term shrinks by more
    loss_guard_min: int = Field(default=20, ge=0)  # smaller long-term memories are not guarded
    report: bool = True  # append a report to the agent's DREAMS.md


class CommitmentSettings(BaseModel):
    """Inferred follow-ups (seed 002's commitments), owned by pipelines/commitments.py."""

    enabled: bool = False  # opt-in, as in OpenClaw
    max_per_day: int = Field(default=3, ge=1)  # inferred per agent and diary day
    expire_after_hours: float = Field(default=48.0, gt=0)  # due and never closed: expired
    lookback_days: int = Field(default=2, ge=1, le=14)  # diary days each pass reads
    use_llm: bool = True  # infer with the configured LLM when there is one
    # a follow-up said again this close in time (the assistant's "I'll remind you" after
    # the user's "remind me") in the same channel, due the same day: one commitment
    same_intent_hours: float = Field(default=6.0, ge=0)


class WikiSettings(BaseModel):
    """The memory wiki (seed 002's memory-wiki), owned by memoryd/wiki/."""

    enabled: bool = False  # the nightly `wiki` pipeline (opt-in, like OpenClaw's plugin)
    min_mentions: int = Field(default=2, ge=1)  # claims naming an entity before it gets a page
    stale_days: int = Field(default=90, ge=1)  # a claim not confirmed for this long is stale
    # two current claims this alike (cosine), on any pages, are compared by their words
    # (memoryd.extract.claims): same subject and attribute, another value -> contested
    # (the fact store compares from extract.supersede_similarity, 0.35, up)
    contradiction_similarity: float = Field(default=0.5, ge=0, le=1)
    # names that are entities even when they only ever open a sentence ("Orion deploys ...")
    entities: list[str] = Field(default_factory=list)
    # one page per entity: a name -> the other spellings of it, matched in any case
    aliases: dict[str, list[str]] = Field(
        default_factory=lambda: {
            "PostgreSQL": ["Postgres", "pg", "psql"],
            "Kubernetes": ["k8s", "kube"],
            "JavaScript": ["JS"],
            "TypeScript": ["TS"],
            "MongoDB": ["Mongo"],
            "Amazon Web Services": ["AWS"],
            "Google Cloud": ["GCP"],
        }
    )
    max_edit_chars: int = Field(default=2000, ge=10)  # the text of one applied claim


class PromoteSettings(BaseModel):
    """Promotion of often-recalled memories into MEMORY.md (OpenClaw's deep dreaming)."""

    record_recalls: bool = True  # searches record which memories they returned
    min_score: float = Field(default=0.8, ge=0, le=1)
    min_recall_count: int = Field(default=3, ge=1)
    min_unique_queries: int = Field(default=3, ge=1)
    weights: dict[str, float] = Field(
        default_factory=lambda: {
            "relevance": 0.30,
            "frequency": 0.24,
            "diversity": 0.15,
            "recency": 0.15,
            "consolidation": 0.10,
            "richness": 0.06,
        }
    )
    recency_half_life_days: float = Field(default=14.0, gt=0)
    max_age_days: int = Field(default=30, ge=1)  # recalls older than this no longer count
    limit: int = Field(default=10, ge=0)  # promotions per agent and run
    max_lines: int = Field(default=200, ge=20)  # MEMORY.md stays this short
    # a promoted line is stale once a newer fact this close in meaning, not told apart by
    # its words, says something else of it (memoryd.extract.claims.says_otherwise)
    stale_similarity: float = Field(default=0.5, ge=0, le=1)
    # each run that saw recalls writes its light / REM / deep review to DREAMS.md
    dreams_report: bool = True


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MEMORYD_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    home: Path = Field(default_factory=default_home)
    # The user a write acts for when it names none (``memoryd add``, ``POST /memory/add``
    # and, unless ``mcp.user_id`` is set, the MCP tools). A read that names no user
    # covers every user the caller may see, on every face (README: "Users").
    default_user: str = "default"
    store: StoreSettings = Field(default_factory=StoreSettings)
    embed: EmbedSettings = Field(default_factory=EmbedSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    workspace: WorkspaceSettings = Field(default_factory=WorkspaceSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    extract: ExtractSettings = Field(default_factory=ExtractSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    diary: DiarySettings = Field(default_factory=DiarySettings)
    decay: DecaySettings = Field(default_factory=DecaySettings)
    lessons: LessonsSettings = Field(default_factory=LessonsSettings)
    pipelines: PipelineSettings = Field(default_factory=PipelineSettings)
    digest: DigestSettings = Field(default_factory=DigestSettings)
    dream: DreamSettings = Field(default_factory=DreamSettings)
    promote: PromoteSettings = Field(default_factory=PromoteSettings)
    commitments: CommitmentSettings = Field(default_factory=CommitmentSettings)
    wiki: WikiSettings = Field(default_factory=WikiSettings)

    @field_validator("home", mode="after")
    @classmethod
    def _expand_home(cls, v: Path) -> Path:
        return v.expanduser()

    @model_validator(mode="after")
    def _model_cache_under_home(self) -> Settings:
        if self.embed.onnx.cache_dir is None and not os.environ.get("XDG_CACHE_HOME"):
            self.embed.onnx.cache_dir = self.home / "cache" / "onnx"
        return self

    @model_validator(mode="after")
    def _mcp_acts_for_the_default_user(self) -> Settings:
        if "user_id" not in self.mcp.model_fields_set:
            self.mcp.user_id = self.default_user
        return self

    def acting_user(self, user_id: str | None) -> str:
        """The user a write acts for: the one named, else ``default_user``."""
        return self.default_user if user_id is None else user_id

    @property
    def store_url(self) -> str:
        return self.store.url or str(self.home / "memoryd.db")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml = _config_file()
        if toml is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml))
        return tuple(sources)


def _config_file() -> Path | None:
    explicit = os.environ.get("MEMORYD_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    for candidate in (Path("memoryd.toml"), default_home() / "memoryd.toml"):
        if candidate.is_file():
            return candidate
    return None
