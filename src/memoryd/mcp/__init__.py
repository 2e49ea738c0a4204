"""memoryd over the Model Context Protocol: the memory tools for any MCP client.

``memoryd mcp`` serves them over stdio (:func:`memoryd.mcp.server.stdio_server`);
``memoryd serve`` mounts them at ``/mcp`` over streamable HTTP
(:func:`memoryd.api.mcp_http.mount`). Nothing is imported here: the SDK takes a
second to import and the CLI must start fast.
"""
