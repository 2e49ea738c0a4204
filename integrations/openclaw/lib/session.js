// The pre-compaction flush and the session-end note, from OpenClaw's hooks.
//
// `before_compaction` fires before OpenClaw summarises a long session away: the
// conversation goes to POST /v1/flush, and memoryd appends to today's diary what
// of it the diary does not already hold (the turns `agent_end` missed). A
// `before_reset` (the user typed /new or /reset) sends the session's end to
// POST /v1/sessions/end, which writes memory/YYYY-MM-DD-<slug>.md. Either event
// may carry the messages or only the path of the session's JSONL transcript;
// both are read. Like the diary capture, nothing here throws into the agent.

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

/** The event's messages, or those of its session file. */
export async function eventMessages(event) {
  if (Array.isArray(event?.messages) && event.messages.length) return conversation(event.messages);
  if (typeof event?.sessionFile === "string" && event.sessionFile) {
    try {
      return conversation(transcriptMessages(await readFile(event.sessionFile, "utf8")));
    } catch {
      return [];
    }
  }
  return [];
}

function agentOf(ctx) {
  return safeId(ctx?.agentId) ?? "main";
}

/** before_compaction: what of the conversation the diary lacks goes to today's diary. */
export async function flushBeforeCompaction(event, ctx, config, logger, fetchImpl = globalThis.fetch) {
  if (!config.enabled || !config.flushOnCompaction) return null;
  const messages = await eventMessages(event);
  if (!messages.length) return null;
  const body = { agent_id: agentOf(ctx), messages };
  const answer = await post(config, "/v1/flush", body, logger, "pre-compaction flush", fetchImpl);
  if (answer?.appended) logger?.debug?.(`memoryd: flushed ${answer.appended} notes to ${answer.path}`);
  return answer;
}

/** before_reset (/new, /reset): the end of the session becomes a session note. */
export async function noteSessionEnd(event, ctx, config, logger, fetchImpl = globalThis.fetch) {
  if (!config.enabled || !config.sessionNotes) return null;
  const messages = (await eventMessages(event)).slice(-SESSION_END_MESSAGES);
  if (!messages.some((m) => m.role === "user")) return null;
  const body = { agent_id: agentOf(ctx), messages };
  const session = safeId(ctx?.sessionId ?? ctx?.sessionKey);
  if (session) body.session_id = session;
  const answer = await post(config, "/v1/sessions/end", body, logger, "session note", fetchImpl);
  if (answer?.path) logger?.debug?.(`memoryd: session note ${answer.path}`);
  return answer;
}
