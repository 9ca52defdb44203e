#!/usr/bin/env node
// A coding agent for planboard's tests, speaking the Agent Client Protocol
// (ACP, version 1) through the protocol's official TypeScript SDK
// (@agentclientprotocol/sdk, from npm). planboard starts it as an ACP
// client over stdio, in a run's workspace, and gives it a task.
//
// On its first prompt it does what a coding agent does, in the order a
// test can follow:
//   1. a plan of three entries (the first in progress, high priority);
//   2. a thought and a message, in pieces;
//   3. a tool call (write answer.txt), with a permission request that
//      offers "allow once", "allow always" and "reject once";
//   4. the file written if allowed (the call completed), not if rejected
//      (the call failed);
//   5. the plan again, every entry completed (or the write dropped when
//      rejected);
//   6. its answer, "The answer is 42.", and the end of its turn.
// A later prompt (a person's comment, an edited plan) is answered with
// "I read: …" and the end of the turn. Every prompt is appended to
// prompts.log in the working directory, and the names of the environment
// variables it was started with to env-keys.txt, for the tests to read.
//
// PLANBOARD_TEST_ACP_MODE=slow: after its plan it waits (up to a minute)
// for session/cancel, so a test can pause or cancel it mid-turn.
// PLANBOARD_TEST_ACP_MODE=plans: only sends PLANBOARD_TEST_ACP_UPDATES
// (default 50) plan updates as fast as it can (each moves one of five
// steps on), then ends.

import * as acp from "@agentclientprotocol/sdk";
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";

const mode = process.env.PLANBOARD_TEST_ACP_MODE || "full";
const sessions = new Map();

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function update(client, sessionId, update) {
  await client.notify(acp.methods.client.session.update, { sessionId, update });
}

async function plan(client, sessionId, entries) {
  await update(client, sessionId, { sessionUpdate: "plan", entries });
}

async function say(client, sessionId, kind, text) {
  // In pieces, as a model writes.
  for (const piece of text.match(/.{1,8}/gs) || []) {
    await update(client, sessionId, {
      sessionUpdate: kind,
      content: { type: "text", text: piece },
    });
  }
}

function textOf(prompt) {
  return prompt
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

async function firstTurn(client, session, task) {
  const id = session.id;
  const entries = [
    { content: "Read the task", priority: "high", status: "in_progress" },
    { content: "Write the answer to answer.txt", priority: "medium", status: "pending" },
    { content: "Report the answer", priority: "low", status: "pending" },
  ];
  await plan(client, id, entries);
  if (mode === "slow") {
    for (let waited = 0; waited < 60000 && !session.cancelled; waited += 50) {
      await sleep(50);
    }
    return { stopReason: session.cancelled ? "cancelled" : "end_turn" };
  }
  await say(client, id, "agent_thought_chunk", `The task is: ${task.slice(0, 60)}`);
  await say(client, id, "agent_message_chunk", "I will write the answer to a file.");
  entries[0].status = "completed";
  entries[1].status = "in_progress";
  await plan(client, id, entries);
  const toolCall = {
    toolCallId: "write-1",
    title: "Write answer.txt",
    kind: "edit",
    status: "pending",
    rawInput: { path: "answer.txt", content: "42\n" },
  };
  await update(client, id, { sessionUpdate: "tool_call", ...toolCall });
  const answer = await client.request(acp.methods.client.session.requestPermission, {
    sessionId: id,
    toolCall: { toolCallId: toolCall.toolCallId, title: toolCall.title, kind: "edit", rawInput: toolCall.rawInput },
    options: [
      { optionId: "allow-once", name: "Allow", kind: "allow_once" },
      { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
      { optionId: "reject-once", name: "Reject", kind: "reject_once" },
    ],
  });
  if (session.cancelled || answer.outcome.outcome === "cancelled") {
    return { stopReason: "cancelled" };
  }
  const allowed = answer.outcome.optionId.startsWith("allow");
  appendFileSync(join(session.cwd, "decisions.log"), `${answer.outcome.optionId}\n`);
  if (allowed) {
    writeFileSync(join(session.cwd, "answer.txt"), "42\n");
    await update(client, id, {
      sessionUpdate: "tool_call_update",
      toolCallId: toolCall.toolCallId,
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: "wrote answer.txt (3 bytes)" } }],
    });
    entries[1].status = "completed";
  } else {
    await update(client, id, {
      sessionUpdate: "tool_call_update",
      toolCallId: toolCall.toolCallId,
      status: "failed",
      content: [{ type: "content", content: { type: "text", text: "the person rejected it" } }],
    });
    entries.splice(1, 1);
  }
  entries[entries.length - 1].status = "completed";
  await plan(client, id, entries);
  await say(client, id, "agent_message_chunk", "The answer is 42.");
  return { stopReason: "end_turn" };
}

async function plansOnly(client, session) {
  const count = Number(process.env.PLANBOARD_TEST_ACP_UPDATES || 50);
  const entries = Array.from({ length: 5 }, (_, i) => ({
    content: `Step ${i + 1}`,
    priority: "medium",
    status: "pending",
  }));
  for (let n = 0; n < count && !session.cancelled; n++) {
    // Each update moves one step on: start it, then finish it.
    const step = Math.floor(n / 2) % entries.length;
    entries[step].status = n % 2 === 0 ? "in_progress" : "completed";
    await plan(client, session.id, entries);
  }
  await say(client, session.id, "agent_message_chunk", "done");
  return { stopReason: "end_turn" };
}

acp
  .agent({ name: "planboard-test-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: "planboard-test-agent", version: "1.0.0" },
    authMethods: [],
  }))
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const id = `s-${sessions.size + 1}-${process.pid}`;
    sessions.set(id, { id, cwd: params.cwd, cancelled: false, turns: 0 });
    writeFileSync(join(params.cwd, "env-keys.txt"), Object.keys(process.env).sort().join("\n") + "\n");
    return { sessionId: id };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session) {
      throw acp.RequestError.invalidParams(`no session ${params.sessionId}`);
    }
    session.cancelled = false;
    session.turns += 1;
    const text = textOf(params.prompt);
    appendFileSync(join(session.cwd, "prompts.log"), `--- prompt ${session.turns}\n${text}\n`);
    if (mode === "plans") {
      return plansOnly(client, session);
    }
    if (session.turns === 1) {
      return firstTurn(client, session, text);
    }
    await say(client, session.id, "agent_message_chunk", `I read: ${text.slice(0, 200)}`);
    return { stopReason: "end_turn" };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (session) {
      session.cancelled = true;
    }
  })
  .connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
