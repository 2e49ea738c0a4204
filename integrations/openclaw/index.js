// memoryd plugin for OpenClaw.
//
// Registers an `agent_end` hook that posts each finished turn to memoryd's
// POST /v1/diary, which appends it to the agent's memory/YYYY-MM-DD.md (the raw
// daily diary memoryd's digest and dream pipelines distil); a `before_compaction`
// hook that flushes what of the conversation the diary lacks (POST /v1/flush),
// reading the session's transcript through OpenClaw's plugin SDK when the event
// carries no messages;
// and a `before_reset` hook (/new, /reset) that keeps the session's end as a
// session note (POST /v1/sessions/end). The hooks are observers: they never
// change the session and never throw into the agent. A failed turn (the run
// failed, or no answer) is left out of the diary.
//
// Config (plugins.entries.memoryd.config in openclaw.json), env as fallback:
//   url      MEMORYD_URL      default http://127.0.0.1:8230
//   apiKey   MEMORYD_API_KEY  when memoryd has API keys configured
//   userId   MEMORYD_USER     the user the agents work for
//   flushOnCompaction, sessionNotes  set false to turn those hooks off
// agent_end needs plugins.entries.memoryd.hooks.allowConversationAccess = true
// (`memoryd setup openclaw` writes all of this).

import { captureTurn, resolveConfig } from "./lib/diary.js";
import { flushBeforeCompaction, noteSessionEnd } from "./lib/session.js";

const plugin = {
  id: "memoryd",
  name: "memoryd",
  description: "Captures every finished agent turn into the agent's daily diary through memoryd, flushes before compaction and keeps session notes on /new.",
  register(api) {
    // OpenClaw re-registers the plugin when its config changes (hot reload), so the
    // config read here is the one in force.
    const config = resolveConfig(api.pluginConfig);
    const opts = { timeoutMs: config.timeoutMs + 1000 };
    api.on("agent_end", async (event, ctx) => captureTurn(event, ctx, config, api.logger), opts);
    api.on(
      "before_compaction",
      async (event, ctx) => flushBeforeCompaction(event, ctx, config, api.logger),
      opts,
    );
    api.on("before_reset", async (event, ctx) => noteSessionEnd(event, ctx, config, api.logger), opts);
    api.logger?.info?.(`memoryd: capturing finished turns to ${config.url}/v1/diary`);
  },
};

export default plugin;
