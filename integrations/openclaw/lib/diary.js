// Diary capture for OpenClaw: turn an `agent_end` event into one POST /v1/diary.
//
// The plugin sends only the turn that just finished (from the last user message
// on), as plain-text messages; memoryd does the rest (noise filter, cleaning,
// the locked append to memory/YYYY-MM-DD.md). Nothing here throws into the
// agent: every failure is logged and the turn is given up, because a memory
// service being down must never break a conversation.

const DEFAULT_URL = "http://127.0.0.1:8230";
const DEFAULT_TIMEOUT_MS = 5000;
const CONVERSATION_ROLES = new Set(["user", "assistant"]);
const TEXT_BLOCKS = new Set(["text", "input_text", "output_text"]);
const ID_MAX = 128;

/**
 * Plugin config, with the environment as fallback.
 * @param {Record<string, unknown> | undefined} pluginConfig
 * @param {Record<string, string | undefined>} env
 */
export function resolveConfig(pluginConfig, env = process.env) {
  const cfg = pluginConfig ?? {};
  const timeout = Number(cfg.timeoutMs ?? env.MEMORYD_TIMEOUT_MS ?? DEFAULT_TIMEOUT_MS);
  return {
    url: String(cfg.url ?? env.MEMORYD_URL ?? DEFAULT_URL).replace(/\/+$/, ""),
    apiKey: stringOrUndefined(cfg.apiKey ?? env.MEMORYD_API_KEY),
    userId: stringOrUndefined(cfg.userId ?? env.MEMORYD_USER),
    timeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : DEFAULT_TIMEOUT_MS,
    enabled: cfg.enabled !== false && env.MEMORYD_CAPTURE !== "off",
    flushOnCompaction: cfg.flushOnCompaction !== false,
    sessionNotes: cfg.sessionNotes !== false,
  };
}

function stringOrUndefined(value) {
  return typeof value === "string" && value.trim() ? value.trim() : undefined;
}

/** The text of a message's content: a string, or the text blocks of a block list. */
export function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b) => b && typeof b === "object" && TEXT_BLOCKS.has(b.type ?? "text"))
    .map((b) => (typeof b.text === "string" ? b.text : ""))
    .filter(Boolean)
    .join("\n");
}

/**
 * The messages of the last turn: from the last user message to the end, as
 * {role, content} with text only. Tool calls, tool results, thinking and
 * images are left out: they are tool chatter, not conversation.
 * @param {unknown[]} messages the whole session history an agent_end event carries
 */
export function lastTurn(messages) {
  if (!Array.isArray(messages)) return [];
  let start = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i] && messages[i].role === "user" && contentText(messages[i].content).trim()) {
      start = i;
      break;
    }
  }
  const turn = start >= 0 ? messages.slice(start) : messages.slice(-1);
  return turn
    .filter((m) => m && CONVERSATION_ROLES.has(m.role))
    .map((m) => ({ role: m.role, content: contentText(m.content) }))
    .filter((m) => m.content.trim());
}

/** An id memoryd accepts (letters, digits and . _ - @ : +), or undefined. */
export function safeId(value) {
  if (value === undefined || value === null) return undefined;
  const id = String(value).replace(/[^\w.@:+-]/g, "-").replace(/^\.+/, "").slice(0, ID_MAX);
  return id || undefined;
}

/**
 * Why a finished turn is not an exchange to keep, or null when it is: the run
 * failed (`success: false`, an `error`), its answer ended in an error, or it
 * has no answer at all (OpenClaw reports a context overflow as a success with
 * an empty answer). Such a turn is skipped, never written as a normal exchange.
 */
export function failedTurn(event) {
  if (event?.success === false) return `the run failed${event.error ? `: ${event.error}` : ""}`;
  if (event?.error) return `the run reported an error: ${event.error}`;
  const messages = Array.isArray(event?.messages) ? event.messages : [];
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === "user" && contentText(messages[i].content).trim()) {
      lastUser = i;
      break;
    }
  }
  const answers = messages.slice(lastUser + 1).filter((m) => m?.role === "assistant");
  if (answers.some((m) => m.stopReason === "error" || m.errorMessage)) return "the answer ended in an error";
  if (lastUser >= 0 && !answers.some((m) => contentText(m.content).trim())) return "the turn has no answer";
  return null;
}

/**
 * The POST /v1/diary body for an agent_end event, or null when there is
 * nothing to send.
 */
export function diaryRequest(event, ctx, config) {
  if (failedTurn(event) !== null) return null;
  const messages = lastTurn(event?.messages);
  if (messages.length === 0) return null;
  const body = {
    agent_id: safeId(ctx?.agentId) ?? "main",
    session_id: safeId(ctx?.sessionId ?? ctx?.sessionKey),
    turn_id: safeId(event?.runId ?? ctx?.runId),
    messages,
  };
  // where the turn happened (telegram, slack, ...): inferred commitments go back there
  const channel = safeId(ctx?.messageProvider ?? ctx?.channelId);
  if (channel) body.channel = channel;
  if (config.userId) body.user_id = config.userId;
  return body;
}

/**
 * POST `body` to memoryd's `route`. Resolves to the answer, or to null when the
 * post failed (logged as `what` failed, never thrown).
 */
export async function post(config, route, body, logger, what, fetchImpl = globalThis.fetch) {
  try {
    const headers = { "content-type": "application/json" };
    if (config.apiKey) headers.authorization = `Bearer ${config.apiKey}`;
    const response = await fetchImpl(`${config.url}${route}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(config.timeoutMs),
    });
    const answer = await response.json().catch(() => null);
    if (!response.ok) {
      const detail = answer?.detail ?? response.statusText;
      const hint = answer?.hint ? ` (${answer.hint})` : "";
      logger?.warn?.(`memoryd: ${what} for ${body.agent_id} failed: ${response.status} ${detail}${hint}`);
      return null;
    }
    return answer;
  } catch (err) {
    const reason = err?.name === "TimeoutError" ? `no answer within ${config.timeoutMs} ms` : String(err?.cause ?? err);
    logger?.warn?.(`memoryd: ${what} skipped, memoryd at ${config.url} unreachable: ${reason}`);
    return null;
  }
}

/**
 * Send one finished turn. Resolves to memoryd's answer, or to null when the
 * turn was skipped or the post failed (logged, never thrown).
 */
export async function captureTurn(event, ctx, config, logger, fetchImpl = globalThis.fetch) {
  if (!config.enabled) return null;
  const failed = failedTurn(event);
  if (failed !== null) {
    logger?.info?.(`memoryd: turn of ${safeId(ctx?.agentId) ?? "main"} not kept in the diary: ${failed}`);
    return null;
  }
  const body = diaryRequest(event, ctx, config);
  if (body === null) return null;
  const answer = await post(config, "/v1/diary", body, logger, "diary capture", fetchImpl);
  if (answer?.written) {
    logger?.debug?.(`memoryd: diary ${body.agent_id} ${answer.path} +${answer.bytes} bytes`);
  }
  return answer;
}
