// The plugin against a live `memoryd serve` (started by tests/test_openclaw_plugin.py,
// which passes MEMORYD_URL, MEMORYD_TEST_KEY and MEMORYD_TEST_OPENCLAW_DIR), plus
// unit tests of the pure parts that run anywhere.
import assert from "node:assert/strict";
import { mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";

import plugin from "../index.js";
import { contentText, diaryRequest, failedTurn, lastTurn, resolveConfig, safeId } from "../lib/diary.js";
import {
  agentOfSessionKey,
  conversation,
  eventMessages,
  flushBeforeCompaction,
  parseSqliteMarker,
  sessionIdentity,
  transcriptMessages,
} from "../lib/session.js";

const URL = process.env.MEMORYD_URL;
const KEY = process.env.MEMORYD_TEST_KEY;
const OPENCLAW_DIR = process.env.MEMORYD_TEST_OPENCLAW_DIR;
const live = { skip: URL ? false : "set MEMORYD_URL to a running memoryd (see tests/test_openclaw_plugin.py)" };

/** A stand-in for OpenClaw's plugin API: records hooks and log lines. */
function fakeApi(pluginConfig) {
  const hooks = new Map();
  const logs = [];
  const log = (level) => (msg) => logs.push(`${level}: ${msg}`);
  return {
    pluginConfig,
    logger: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") },
    on(name, handler, opts) {
      hooks.set(name, { handler, opts });
    },
    hooks,
    logs,
  };
}

function fire(api, name, event, ctx) {
  const hook = api.hooks.get(name);
  assert.ok(hook, `the plugin registers a ${name} hook`);
  return hook.handler(event, ctx);
}

function agentEnd(api, event, ctx) {
  return fire(api, "agent_end", event, ctx);
}

// A session as OpenClaw's embedded agent keeps it: content blocks, tool calls, tool results.
function session(runId) {
  return {
    success: true,
    durationMs: 1234,
    runId,
    messages: [
      { role: "user", content: "Where do we keep the staging credentials?" },
      { role: "assistant", content: [{ type: "text", text: "In Vault under secret/staging." }] },
      { role: "user", content: [{ type: "text", text: "[Mon 2026-03-23 10:02 GMT+1] Why did yesterday's deploy to prod-eu-1 fail?" }] },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "check the deploy log" },
          { type: "toolCall", id: "c1", name: "exec", arguments: { command: "kubectl logs deploy/api" } },
        ],
      },
      { role: "toolResult", toolCallId: "c1", content: [{ type: "text", text: "OOMKilled ".repeat(200) }] },
      {
        role: "assistant",
        content: [{ type: "text", text: "The api pods were OOMKilled: the memory limit is 512Mi and the new cache needs ~700Mi. Raise the limit to 1Gi." }],
      },
    ],
  };
}

async function diaryText(agent, date) {
  return readFile(join(OPENCLAW_DIR, `workspace-${agent}`, "memory", `${date}.md`), "utf8");
}

describe("pure parts", () => {
  test("config falls back to the environment, then to defaults", () => {
    assert.deepEqual(resolveConfig({}, {}), {
      url: "http://127.0.0.1:8230",
      apiKey: undefined,
      userId: undefined,
      timeoutMs: 5000,
      enabled: true,
      flushOnCompaction: true,
      sessionNotes: true,
    });
    const env = { MEMORYD_URL: "http://mem:9000/", MEMORYD_API_KEY: "k", MEMORYD_USER: "boss" };
    assert.equal(resolveConfig({}, env).url, "http://mem:9000");
    assert.equal(resolveConfig({ url: "http://cfg:1" }, env).url, "http://cfg:1");
    assert.equal(resolveConfig({ enabled: false }, env).enabled, false);
  });

  test("only the last turn's conversation text is sent", () => {
    const turn = lastTurn(session("r").messages);
    assert.deepEqual(
      turn.map((m) => m.role),
      ["user", "assistant"],
    );
    assert.match(turn[0].content, /Why did yesterday's deploy/);
    assert.match(turn[1].content, /OOMKilled: the memory limit/);
    assert.equal(contentText([{ type: "image", data: "..." }, { type: "text", text: "hi" }]), "hi");
    assert.deepEqual(lastTurn(undefined), []);
  });

  test("ids are made acceptable to memoryd", () => {
    assert.equal(safeId("agent:main:telegram/123"), "agent:main:telegram-123");
    assert.equal(safeId("../x"), "-x");
    assert.equal(safeId(undefined), undefined);
    assert.equal(safeId("x".repeat(300)).length, 128);
    const body = diaryRequest(session("run 7"), { agentId: "main", sessionKey: "agent:main:main" }, { userId: "boss" });
    assert.equal(body.turn_id, "run-7");
    assert.equal(body.session_id, "agent:main:main");
    assert.equal(body.user_id, "boss");
    assert.equal(body.channel, undefined);
    const fromTelegram = diaryRequest(session("r"), { agentId: "main", messageProvider: "telegram" }, {});
    assert.equal(fromTelegram.channel, "telegram"); // commitments are delivered back there
  });
});

describe("failed turns", () => {
  const ask = { role: "user", content: "Summarise the incident report." };
  test("a failed run, an error answer or no answer is not an exchange", () => {
    assert.equal(failedTurn(session("r")), null);
    assert.match(failedTurn({ success: false, error: "context overflow", messages: [ask] }), /run failed: context overflow/);
    assert.match(failedTurn({ success: true, messages: [ask] }), /no answer/);
    assert.match(
      failedTurn({ success: true, messages: [ask, { role: "assistant", content: [], stopReason: "error", errorMessage: "400 context length" }] }),
      /ended in an error/,
    );
    assert.equal(diaryRequest({ success: true, messages: [ask] }, { agentId: "main" }, resolveConfig({}, {})), null);
  });

  test("a failed turn posts nothing and says why", async () => {
    let calls = 0;
    const api = fakeApi({ url: "http://memoryd.test" });
    const { captureTurn } = await import("../lib/diary.js");
    const answer = await captureTurn({ success: true, messages: [ask] }, { agentId: "main" }, resolveConfig({}, {}), api.logger, async () => {
      calls += 1;
      return new Response("{}");
    });
    assert.equal(answer, null);
    assert.equal(calls, 0);
    assert.match(api.logs.join("\n"), /turn of main not kept in the diary: the turn has no answer/);
  });
});

describe("compaction and reset", () => {
  test("the conversation is the user and assistant text, oldest first", () => {
    const msgs = conversation(session("r").messages);
    assert.deepEqual(
      msgs.map((m) => m.role),
      ["user", "assistant", "user", "assistant"],
    );
    assert.ok(!msgs.some((m) => /kubectl|OOMKilled OOMKilled/.test(m.content)));
    const long = Array.from({ length: 300 }, (_, i) => ({ role: "user", content: `${i} `.padEnd(2000, "x") }));
    const kept = conversation(long);
    assert.ok(kept.length < 300 && kept.at(-1).content.startsWith("299 "), "the end of a long session is kept");
  });

  test("a session file is read when the event carries no messages", async () => {
    const lines = [
      JSON.stringify({ type: "session", id: "s1" }),
      JSON.stringify({ type: "message", message: { role: "user", content: "Our VPN gateway is vpn-3." } }),
      "{ half a line being writ",
      JSON.stringify({ type: "message", message: { role: "assistant", content: [{ type: "text", text: "Noted." }] } }),
    ];
    assert.equal(transcriptMessages(lines.join("\n")).length, 2);
    const dir = await mkdtemp(join(tmpdir(), "memoryd-plugin-"));
    const file = join(dir, "s1.jsonl");
    await writeFile(file, lines.join("\n"));
    assert.deepEqual(await eventMessages({ sessionFile: file }), [
      { role: "user", content: "Our VPN gateway is vpn-3." },
      { role: "assistant", content: "Noted." },
    ]);
    assert.deepEqual(await eventMessages({ sessionFile: join(dir, "missing.jsonl") }), []);
  });

  test("OpenClaw 2026.9: a compaction without messages reads the transcript of the right agent", async () => {
    assert.deepEqual(parseSqliteMarker("sqlite:ops:4f1c:/home/u/.openclaw/agents/ops/agent/openclaw-agent.sqlite"), {
      agentId: "ops",
      sessionId: "4f1c",
      storePath: "/home/u/.openclaw/agents/ops/agent/openclaw-agent.sqlite",
    });
    assert.equal(parseSqliteMarker("/home/u/.openclaw/agents/ops/sessions/4f1c.jsonl"), null);
    assert.equal(agentOfSessionKey("agent:ops:main"), "ops");
    assert.equal(agentOfSessionKey("main"), undefined);
    // manual, budget and overflow compactions: counts only, the context names the session
    assert.deepEqual(sessionIdentity({ messageCount: 12, tokenCount: 9000 }, { agentId: "ops", sessionId: "s9", sessionKey: "agent:ops:main" }), {
      agentId: "ops",
      sessionId: "s9",
      sessionKey: "agent:ops:main",
    });
    // in-run compaction: the context has only the session key
    assert.deepEqual(sessionIdentity({ messageCount: 3 }, { sessionKey: "agent:ops:main" }), { agentId: "ops", sessionKey: "agent:ops:main" });
    // harness paths: messageCount -1 and a sqlite marker
    assert.deepEqual(sessionIdentity({ messageCount: -1, sessionFile: "sqlite:ops:s9:/x.sqlite" }, {}), { agentId: "ops", sessionId: "s9" });

    const asked = [];
    const readTranscript = async (scope) => {
      asked.push(scope);
      return session("r").messages;
    };
    const posted = [];
    const fetchImpl = async (url, init) => {
      posted.push({ url, body: JSON.parse(init.body) });
      return new Response(JSON.stringify({ appended: 1, path: "memory/x.md" }));
    };
    const config = resolveConfig({ url: "http://memoryd.test" }, {});
    const answer = await flushBeforeCompaction(
      { messageCount: -1, sessionFile: "sqlite:ops:s9:/x.sqlite" },
      { sessionKey: "agent:ops:main" },
      config,
      undefined,
      fetchImpl,
      readTranscript,
    );
    assert.equal(answer.appended, 1);
    assert.deepEqual(asked, [{ agentId: "ops", sessionId: "s9", sessionKey: "agent:ops:main" }]);
    assert.equal(posted.length, 1);
    assert.equal(posted[0].url, "http://memoryd.test/v1/flush");
    assert.equal(posted[0].body.agent_id, "ops");
    assert.deepEqual(posted[0].body.messages.map((m) => m.role), ["user", "assistant", "user", "assistant"]);

    // a marker is never read as a file, and a reader that fails gives nothing (logged)
    const logs = [];
    const logger = { warn: (m) => logs.push(m), debug: () => {} };
    const broken = async () => {
      throw new Error("database is locked");
    };
    assert.deepEqual(await eventMessages({ sessionFile: "sqlite:ops:s9:/x.sqlite" }, {}, { readTranscript: broken, logger }), []);
    assert.match(logs.join("\n"), /cannot read the transcript of s9: database is locked/);
    assert.deepEqual(await eventMessages({ sessionFile: "sqlite:ops:s9:/x.sqlite" }, {}, { readTranscript: null, logger }), []);
    assert.doesNotMatch(logs.join("\n"), /session file/);
  });

  test("the hooks can be turned off", async () => {
    let calls = 0;
    const fetchImpl = async () => {
      calls += 1;
      return new Response("{}");
    };
    const { flushBeforeCompaction, noteSessionEnd } = await import("../lib/session.js");
    const off = resolveConfig({ flushOnCompaction: false, sessionNotes: false }, {});
    assert.equal(await flushBeforeCompaction(session("r"), {}, off, undefined, fetchImpl), null);
    assert.equal(await noteSessionEnd(session("r"), {}, off, undefined, fetchImpl), null);
    assert.equal(calls, 0);
  });
});

describe("against a live memoryd", live, () => {
  test("before compaction, what the diary lacks is flushed; /new writes a session note", async () => {
    const api = fakeApi({ url: URL, apiKey: KEY });
    plugin.register(api);
    const ctx = { agentId: "main", sessionId: "s-live-3" };
    const captured = await agentEnd(api, session("run-3"), ctx);
    assert.equal(captured.written, true, JSON.stringify(captured));
    const history = session("run-3").messages;
    history.push({ role: "user", content: "Remember that the on-call phone is +44 20 7946 0018." });
    const flushed = await fire(api, "before_compaction", { messageCount: history.length, messages: history }, ctx);
    assert.ok(flushed.appended >= 1, JSON.stringify(flushed));
    const text = await diaryText("main", captured.date);
    const section = text.split("· flush\n")[1];
    assert.match(section, /on-call phone is \+44 20 7946 0018/);
    assert.doesNotMatch(section, /OOMKilled: the memory limit/); // captured by agent_end already

    const note = await fire(api, "before_reset", { reason: "new", messages: history }, ctx);
    assert.match(note.path, /^memory\/\d{4}-\d\d-\d\d-[\w-]+\.md$/, JSON.stringify(note));
    const body = await readFile(join(OPENCLAW_DIR, "workspace-main", note.path), "utf8");
    assert.match(body, /on-call phone/);
  });

  test("a finished turn lands in the agent's diary, once", async () => {
    const api = fakeApi({ url: URL, apiKey: KEY });
    plugin.register(api);
    const ctx = { agentId: "main", sessionId: "s-live-1" };
    const answer = await agentEnd(api, session("run-1"), ctx);
    assert.equal(answer.written, true, JSON.stringify(answer));
    assert.equal(answer.path, `memory/${answer.date}.md`);
    const again = await agentEnd(api, session("run-1"), ctx);
    assert.equal(again.written, false);
    assert.equal(again.reason, "duplicate");

    const text = await diaryText("main", answer.date);
    assert.equal(text.match(/^## \d\d:\d\d · session s-live-1$/gm).length, 1);
    assert.match(text, /- \*\*user\*\*: Why did yesterday's deploy to prod-eu-1 fail\?/);
    assert.match(text, /- \*\*assistant\*\*: The api pods were OOMKilled: the memory limit is 512Mi/);
    assert.doesNotMatch(text, /Where do we keep the staging credentials/); // an earlier turn
    assert.doesNotMatch(text, /kubectl logs|check the deploy log|OOMKilled OOMKilled/); // tool chatter
    assert.doesNotMatch(text, /GMT\+1/); // channel metadata
  });

  test("small talk writes nothing", async () => {
    const api = fakeApi({ url: URL, apiKey: KEY });
    plugin.register(api);
    const answer = await agentEnd(
      api,
      { success: true, runId: "run-hi", messages: [{ role: "user", content: "hi!" }, { role: "assistant", content: "Hello! What can I do for you?" }] },
      { agentId: "main", sessionId: "s-live-2" },
    );
    assert.equal(answer.written, false);
    assert.equal(answer.reason, "noise");
    assert.doesNotMatch(await diaryText("main", answer.date), /s-live-2/);
  });

  test("a key is held to its agents, and the failure is logged, not thrown", async () => {
    const api = fakeApi({ url: URL, apiKey: KEY });
    plugin.register(api);
    const answer = await agentEnd(api, session("run-ops"), { agentId: "ops", sessionId: "s-ops" });
    assert.equal(answer, null);
    assert.ok(api.logs.some((l) => /^warn: memoryd: diary capture for ops failed: 403/.test(l)), api.logs.join("\n"));
    await assert.rejects(stat(join(OPENCLAW_DIR, "workspace-ops", "memory")));

    const nokey = fakeApi({ url: URL });
    plugin.register(nokey);
    assert.equal(await agentEnd(nokey, session("run-nokey"), { agentId: "main" }), null);
    assert.ok(nokey.logs.some((l) => /failed: 401 .*API key/.test(l)), nokey.logs.join("\n"));
  });

  test("memoryd being down never breaks the agent", async () => {
    const api = fakeApi({ url: "http://127.0.0.1:9", apiKey: KEY, timeoutMs: 500 });
    plugin.register(api);
    const answer = await agentEnd(api, session("run-down"), { agentId: "main" });
    assert.equal(answer, null);
    assert.ok(api.logs.some((l) => /^warn: memoryd: diary capture skipped, memoryd at http:\/\/127\.0\.0\.1:9 unreachable/.test(l)));
  });
});
