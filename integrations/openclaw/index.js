// memoryd plugin for OpenClaw.
//
// Registers an `agent_end` hook that posts each finished turn to memoryd's
// POST /v1/diary, which appends it to the agent's memory/YYYY-MM-DD.md (the raw
// daily diary memoryd's digest and dream pipelines distil). The hook is an
// observer: it never changes the turn and never throws into the agent.
//
// Config (plugins.entries.memoryd.config in openclaw.json), env as fallback:
//   url      MEMORYD_URL      default http://127.0.0.1:8230
//   apiKey   MEMORYD_API_KEY  when memoryd has API keys configured
//   userId   MEMORYD_USER     the user the agents work for
// agent_end needs plugins.entries.memoryd.hooks.allowConversationAccess = true
// (`memoryd setup openclaw` writes all of this).

import { captureTurn, resolveConfig } from "./lib/diary.js";

const plugin = {
  id: "memoryd",
  name: "memoryd",
  description: "Captures every finished agent turn into the agent's daily diary through memoryd.",
  register(api) {
    const config = resolveConfig(api.pluginConfig);
    api.on(
      "agent_end",
      async (event, ctx) => {
        // Per-handler config from the host wins over the one read at registration.
        const current = event?.context?.pluginConfig ? resolveConfig(event.context.pluginConfig) : config;
        return captureTurn(event, ctx, current, api.logger);
      },
      { timeoutMs: config.timeoutMs + 1000 },
    );
    api.logger?.info?.(`memoryd: capturing finished turns to ${config.url}/v1/diary`);
  },
};

export default plugin;
