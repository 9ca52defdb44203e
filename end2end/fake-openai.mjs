// A fake OpenAI-compatible chat server for the end-to-end tests: it answers
// by the JSON schema asked for, after a delay, so the board's live states
// can be seen. Usage: node fake-openai.mjs <port>
import http from "node:http";

const port = Number(process.argv[2] ?? 0);
const delay = Number(process.env.FAKE_OPENAI_DELAY_MS ?? 400);

// [chart]'s code: a 120×80 bar chart as a PNG (zlib and struct only, so
// it runs without the data stack) and an SVG trend line with a script.
const CHART_CODE = String.raw`import struct, zlib
def chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
w, h, bars = 120, 80, [20, 50, 35, 70]
rows = b''
for y in range(h):
    rows += b'\x00'
    for x in range(w):
        on = h - y <= bars[x // 30] and x % 30 > 4
        rows += bytes([21, 101, 192] if on else [255, 255, 255])
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')
open('chart.png', 'wb').write(png)
open('trend.svg', 'w').write('<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><script>top.svgPwned = true</script><polyline points="0,50 40,30 80,35 120,10" style="fill:none;stroke:#b3261e;stroke-width:3"/></svg>')
print('wrote chart.png and trend.svg')`;

function answer(request) {
  const shape = request?.response_format?.json_schema?.name ?? "text";
  const brief = request?.messages?.[1]?.content ?? "";
  // The markers ([ask], [fail], ...) are read from the task line only:
  // the rest of a brief may quote other tasks (recalled memories of
  // earlier stories' runs), whose markers are not this run's.
  const task = brief.split("\n")[0];
  const line = brief.split("\n").find((l) => l.startsWith("Your subtask #")) ?? "";
  const subtask = line.split(": ").slice(1).join(": ");
  switch (shape) {
    case "mode":
      return { confidence: 0.9, mode: "complex", reason: "two parts can run in parallel, then one combines them" };
    case "source":
      // Where the answer comes from: the web, so every tool stays offered.
      return { source: "web", why: "it may need a page" };
    case "plan":
      // [card]: a plan whose first step names a guarded tool, whose second
      // reads a file nobody gave, feeds nothing and has no expected
      // outcome: the approval card's tools and checks can be seen.
      if (task.includes("[card]")) {
        return {
          title: "Card check",
          subtasks: [
            { name: "look at the first", description: "list the folder with run_shell", expected_outcome: "notes", depends_on: [], tool: "run_shell" },
            { name: "look at the second", description: "read data.csv", expected_outcome: "", depends_on: [] },
            { name: "combine", description: "compare the notes", expected_outcome: "a comparison", depends_on: [1] },
          ],
        };
      }
      // A revision after a rejection: one subtask changed, one added, one
      // replaced, so the board's revision marks can be seen.
      if (JSON.stringify(request.messages ?? []).includes("The person's comment:")) {
        return {
          title: "Compare, check licences and write up",
          subtasks: [
            { name: "look at the first", description: "read it", expected_outcome: "notes", depends_on: [] },
            { name: "look at the second", description: "read it and its changelog", expected_outcome: "notes", depends_on: [] },
            { name: "check their licences", description: "read both licences", expected_outcome: "a licence note", depends_on: [] },
            { name: "write the comparison", description: "compare the notes", expected_outcome: "a comparison", depends_on: [1, 2, 3] },
          ],
        };
      }
      return {
        title: "Compare and combine",
        subtasks: [
          { name: "look at the first", description: "read it", expected_outcome: "notes", depends_on: [] },
          { name: "look at the second", description: "read it", expected_outcome: "notes", depends_on: [] },
          { name: "combine", description: "compare the notes", expected_outcome: "a comparison", depends_on: [1, 2] },
        ],
      };
    case "action":
      // Tasks marked [ask] or [fail] make the first subtask ask a person
      // (until someone answered) or fail.
      if (subtask === "look at the first" && task.includes("[ask]") && !brief.includes("What people said")) {
        return { action: "ask", question: "Which of the two libraries do you mean first?" };
      }
      // [file]: the first subtask writes a file in the run's workspace, then
      // completes once it has seen the tool's result.
      // Asked for another model than "fake" (a replay's), it writes another
      // file: the one call the recording does not hold, the runs' first
      // divergence.
      if (subtask === "look at the first" && task.includes("[file]") && (request.messages?.length ?? 0) <= 2) {
        const other = request.model && request.model !== "fake";
        const path = other ? "notes/other.md" : "notes/first.md";
        return { action: "write_file", arguments: { path, content: "# The first library\n\nIts notes." } };
      }
      // [chart]: the first subtask's code draws a bar chart (a PNG, with
      // the standard library alone) and a trend line (an SVG carrying a
      // script that must never run), then completes.
      if (subtask === "look at the first" && task.includes("[chart]") && (request.messages?.length ?? 0) <= 2) {
        return { action: "run_python", arguments: { code: CHART_CODE } };
      }
      // [shell], [card]: the first subtask asks to run a shell command (a
      // guarded tool: a person decides, or a grant lets it run), then
      // completes once it has seen the result.
      if (subtask === "look at the first" && (task.includes("[shell]") || task.includes("[card]")) && (request.messages?.length ?? 0) <= 2) {
        return { action: "run_shell", arguments: { command: "echo hello from the sandbox > hello.txt" } };
      }
      // [elicit]: the first subtask calls the MCP server's tool that asks a
      // person for a form mid-call (server-everything's), then completes
      // with the name the tool was given.
      if (subtask === "look at the first" && task.includes("[elicit]")) {
        const told = JSON.stringify(request.messages ?? []).match(/Name: ([A-Za-z ]+)/);
        if (!told) return { action: "trigger-elicitation-request", arguments: {} };
        return { action: "complete", result: `the form was filled in for ${told[1]}` };
      }
      if (subtask === "look at the first" && task.includes("[fail]")) {
        return { action: "fail", reason: "the first library's documentation cannot be read" };
      }
      if (subtask === "check item 2" && !brief.includes("an earlier attempt failed")) {
        return { action: "fail", reason: "item 2 answered HTTP 503" };
      }
      return { action: "complete", result: `done: ${subtask}` };
    case "batch": {
      // Seed 002's batches: one subtask per item the schema allows; the
      // item numbered 2 fails its first attempt (see "action").
      const items = request.response_format.json_schema.schema?.properties?.subtasks?.items?.properties?.items?.items?.enum ?? [];
      return { subtasks: items.map((n) => ({ name: `check item ${n}`, description: "call it once", expected_outcome: "it answers", items: [n] })) };
    }
    case "recover":
      // [fail]: the planner sees nothing the agent could do differently.
      return { decision: "give_up", reason: "only a person can say where the documentation is", name: "", description: "" };
    case "adapt":
      return { drop: [], needs_change: false, reason: "fine", revise: [] };
    case "todo_update":
      return { drop: [], needs_update: false, reason: "fine", new_todos: [] };
    default:
      // [chart]: the answer names the SVG before the PNG.
      if (task.includes("[chart]")) {
        return "The trend is drawn in trend.svg, the sales per region in chart.png.";
      }
      // A hostile reply: it must stay text on the board.
      return "The final answer <b>not bold</b><script>window.pwned = true</script>";
  }
}

const limited = new Set();

http
  .createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      let request = {};
      try {
        request = JSON.parse(body);
      } catch {}
      // Tasks marked [retry]: the first subtask's first call is rate
      // limited with Retry-After: 8, so the board's countdown can be seen.
      const key = request?.messages?.[1]?.content ?? "";
      const first = key.split("\n").some((l) => l.startsWith("Your subtask #") && l.endsWith(": look at the first"));
      if (key.split("\n")[0].includes("[retry]") && request?.response_format?.json_schema?.name === "action" && first) {
        if (!limited.has(key)) {
          limited.add(key);
          res.writeHead(429, { "content-type": "application/json", "retry-after": "8" });
          res.end(JSON.stringify({ error: { message: "rate limited (fake)", type: "rate_limit_exceeded" } }));
          return;
        }
      }
      const content = answer(request);
      // Tasks marked [slow] give a person time to act mid-run.
      const slow = (request?.messages?.[1]?.content ?? "").split("\n")[0].includes("[slow]");
      const reply = {
        id: "chatcmpl-fake",
        object: "chat.completion",
        created: 0,
        model: "fake",
        choices: [{ index: 0, message: { role: "assistant", content: typeof content === "string" ? content : JSON.stringify(content) }, finish_reason: "stop" }],
        usage: { prompt_tokens: 120, completion_tokens: 30 },
      };
      const wait = slow ? delay * 4 : delay;
      if (!request.stream) {
        setTimeout(() => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify(reply));
        }, wait);
        return;
      }
      // Streamed: the text in four pieces spread over the same delay, so
      // the board shows a reply being written.
      const text = reply.choices[0].message.content;
      const chunk = (delta, finish, usage) =>
        `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model: "fake", choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
      res.writeHead(200, { "content-type": "text/event-stream" });
      const pieces = [0, 1, 2, 3].map((i) => text.slice((text.length * i) >> 2, (text.length * (i + 1)) >> 2));
      pieces.forEach((piece, i) => setTimeout(() => res.write(chunk({ content: piece }, null)), (wait * i) / 4));
      setTimeout(() => {
        res.write(chunk({}, "stop", reply.usage));
        res.end("data: [DONE]\n\n");
      }, wait);
    });
  })
  .listen(port, "127.0.0.1", function () {
    console.log(`fake OpenAI on http://127.0.0.1:${this.address().port}/v1`);
  });
