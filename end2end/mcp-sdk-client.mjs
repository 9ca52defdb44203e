// The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk, from
// npm) planning on planboard's /mcp at the revision asked for, for the
// server's API tests (`PLANBOARD_TEST_MCP_SDK_CLIENT`):
//
//   node end2end/mcp-sdk-client.mjs <url of /mcp> <revision>
//
// The SDK's client always offers its newest revision (2025-11-25); an older
// client is played by offering the older one in `initialize`, which is all
// that tells an older client apart at the start. It prints one JSON line:
// the revision agreed, the tools, what create_plan and get_hint answered,
// the hint resource's text, and how the session ended.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, revision] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url));
const send = transport.send.bind(transport);
transport.send = (message, options) => {
  if (message.method === "initialize") {
    message = { ...message, params: { ...message.params, protocolVersion: revision } };
  }
  return send(message, options);
};
const client = new Client({ name: "official-sdk-client", version: "1" });
await client.connect(transport);
const text = (result) => result.content.map((c) => c.text ?? "").join("\n");
const tools = await client.listTools();
const created = await client.callTool({
  name: "create_plan",
  arguments: { title: "Planned by the SDK", subtasks: [{ name: "measure the room" }] },
});
const hint = await client.callTool({ name: "get_hint", arguments: {} });
const resources = await client.listResources();
const read = await client.readResource({ uri: "planboard://session/hint" });
let ended = "terminated";
try {
  await transport.terminateSession();
} catch (e) {
  ended = `failed: ${e.message}`;
}
await client.close();
console.log(
  JSON.stringify({
    negotiated: transport.protocolVersion,
    tools: tools.tools.map((t) => t.name),
    created: { isError: created.isError ?? false, text: text(created) },
    hint: text(hint),
    resources: resources.resources.map((r) => r.uri),
    resource: read.contents.map((c) => c.text).join("\n"),
    ended,
  }),
);
