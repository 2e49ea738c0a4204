// The pre-compaction flush and the session-end note, from OpenClaw's hooks.
//
// `before_compaction` fires before OpenClaw summarises a long session away: the
// conversation goes to POST /v1/flush, and memoryd appends to today's diary what
// of it the diary does not already hold (the turns `agent_end` missed). A
// `before_reset` (the user typed /new or /reset) sends the session's end to
// POST /v1/sessions/end, which writes memory/YYYY-MM-DD-<slug>.md. Like the
// diary capture, nothing here throws into the agent.
//
// Where the conversation comes from depends on the OpenClaw version and on which
// path compacts: the event's `messages` (in-run compaction, older versions); else
// the session's transcript, read through the plugin SDK
// (`openclaw/plugin-sdk/session-transcript-runtime`, OpenClaw 2026.9 keeps
// sessions in SQLite: manual, budget and overflow compactions send only counts,
// and `sessionFile` is a `sqlite:<agentId>:<sessionId>:<store>` marker); else
// `sessionFile` as a JSONL path (older versions). The agent is the context's
// `agentId`, else the one a session key (`agent:<id>:...`) or marker names.

import { readFile } from "node:fs/promises";

import { contentText, post, safeId } from "./diary.js";

const CONVERSATION_ROLES = new Set(["user", "assistant"]);
// memoryd refuses bodies over 1 MiB: keep the end of a long session within this
const MAX_CHARS = 400_000;
const SESSION_END_MESSAGES = 50;

/** The user/assistant text messages of a history, oldest first, the latest within MAX_CHARS. */
export function conversation(messages) {
  if (!Array.isArray(messages)) return [];
  const out = [];
  let size = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (!m || !CONVERSATION_ROLES.has(m.role)) continue;
    const content = contentText(m.content);
    if (!content.trim()) continue;
    size += content.length;
    if (size > MAX_CHARS) break;
    out.push({ role: m.role, content });
  }
  return out.reverse();
}

/** The messages of an OpenClaw session file (JSON lines; `{"type": "message", "message": {...}}`). */
export function transcriptMessages(text) {
  const out = [];
  for (const line of String(text).split("\n")) {
    if (!line.trim()) continue;
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // a line being written as we read: the rest is still good
    }
    const message = entry?.type === "message" ? entry.message : entry;
    if (message && typeof message === "object" && "role" in message) out.push(message);
  }
  return out;
}

/** `sqlite:<agentId>:<sessionId>:<store path>` (OpenClaw 2026.9's sessionFile), parsed; else null. */
export function parseSqliteMarker(sessionFile) {
  if (typeof sessionFile !== "string" || !sessionFile.startsWith("sqlite:")) return null;
  const [, agentId, sessionId, ...rest] = sessionFile.split(":");
  if (!agentId || !sessionId) return null;
  return { agentId, sessionId, storePath: rest.join(":") || undefined };
}

/** The agent a session key names (`agent:<id>:<rest>`), else undefined. */
export function agentOfSessionKey(sessionKey) {
  if (typeof sessionKey !== "string") return undefined;
  const match = /^agent:([^:]+):/i.exec(sessionKey.trim());
  return match ? match[1].toLowerCase() : undefined;
}

/**
 * Which session a hook is about: `{agentId, sessionId, sessionKey}` from the
 * context, completed from the session key and the sessionFile marker.
 */
export function sessionIdentity(event, ctx) {
  const marker = parseSqliteMarker(event?.sessionFile);
  const agentId = ctx?.agentId ?? agentOfSessionKey(ctx?.sessionKey) ?? marker?.agentId;
  const sessionId = ctx?.sessionId ?? marker?.sessionId;
  const identity = {};
  if (agentId) identity.agentId = String(agentId);
  if (sessionId) identity.sessionId = String(sessionId);
  if (ctx?.sessionKey) identity.sessionKey = String(ctx.sessionKey);
  return identity;
}

let sdkReader;

/**
 * OpenClaw's transcript reader (plugin SDK), or null where the SDK is not there
 * (an older OpenClaw, or these tests outside the gateway). Loaded once.
 * @returns {Promise<((scope: object) => Promise<unknown[]>) | null>}
 */
export async function sdkTranscriptReader() {
  if (sdkReader === undefined) {
    try {
      const sdk = await import("openclaw/plugin-sdk/session-transcript-runtime");
      const read = sdk.readVisibleSessionTranscriptMessageEntries;
      sdkReader =
        typeof read === "function"
          ? async (scope) => (await read(scope)).map((entry) => entry?.message ?? entry)
          : null;
    } catch {
      sdkReader = null;
    }
  }
  return sdkReader;
}

/**
 * The conversation a hook is about: the event's messages, else the transcript
 * through the SDK (`readTranscript`, for tests), else a JSONL `sessionFile`.
 * A failed read is logged and gives no messages.
 */
export async function eventMessages(event, ctx = {}, { readTranscript, logger } = {}) {
  if (Array.isArray(event?.messages) && event.messages.length) return conversation(event.messages);
  const identity = sessionIdentity(event, ctx);
  const read = readTranscript === undefined ? await sdkTranscriptReader() : readTranscript;
  if (read && identity.agentId && (identity.sessionId || identity.sessionKey)) {
    try {
      const messages = conversation(await read(identity));
      if (messages.length) return messages;
    } catch (err) {
      logger?.warn?.(`memoryd: cannot read the transcript of ${identity.sessionKey ?? identity.sessionId}: ${err?.message ?? err}`);
    }
  }
  const file = event?.sessionFile;
  if (typeof file === "string" && file && !file.startsWith("sqlite:")) {
    try {
      return conversation(transcriptMessages(await readFile(file, "utf8")));
    } catch (err) {
      logger?.warn?.(`memoryd: cannot read the session file ${file}: ${err?.code ?? err}`);
      return [];
    }
  }
  return [];
}

function agentOf(event, ctx) {
  return safeId(sessionIdentity(event, ctx).agentId) ?? "main";
}

/** before_compaction: what of the conversation the diary lacks goes to today's diary. */
export async function flushBeforeCompaction(event, ctx, config, logger, fetchImpl = globalThis.fetch, readTranscript = undefined) {
  if (!config.enabled || !config.flushOnCompaction) return null;
  const messages = await eventMessages(event, ctx, { readTranscript, logger });
  if (!messages.length) {
    logger?.debug?.("memoryd: nothing to flush before compaction (no messages found)");
    return null;
  }
  const body = { agent_id: agentOf(event, ctx), messages };
  const answer = await post(config, "/v1/flush", body, logger, "pre-compaction flush", fetchImpl);
  if (answer?.appended) logger?.debug?.(`memoryd: flushed ${answer.appended} notes to ${answer.path}`);
  return answer;
}

/** before_reset (/new, /reset): the end of the session becomes a session note. */
export async function noteSessionEnd(event, ctx, config, logger, fetchImpl = globalThis.fetch, readTranscript = undefined) {
  if (!config.enabled || !config.sessionNotes) return null;
  const messages = (await eventMessages(event, ctx, { readTranscript, logger })).slice(-SESSION_END_MESSAGES);
  if (!messages.some((m) => m.role === "user")) return null;
  const body = { agent_id: agentOf(event, ctx), messages };
  const session = safeId(ctx?.sessionId ?? ctx?.sessionKey);
  if (session) body.session_id = session;
  const answer = await post(config, "/v1/sessions/end", body, logger, "session note", fetchImpl);
  if (answer?.path) logger?.debug?.(`memoryd: session note ${answer.path}`);
  return answer;
}
