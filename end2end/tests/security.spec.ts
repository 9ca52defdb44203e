import * as fs from "fs";
import * as http from "http";
import { AddressInfo } from "net";
import { APIRequestContext, chromium, expect, test } from "@playwright/test";
import { unique } from "./helpers";

// Local mode has no login: whoever reaches the port may change everything.
// These stories are the attacks a browser makes for a page on another site
// (a form, a fetch, a host name rebound to this machine); the board must
// refuse each and change nothing (server/src/web/guard.rs).

const board = new URL(process.env.PLANBOARD_URL ?? "http://127.0.0.1:3000");

/** A page on another site serving `html`; 127.0.0.1 and localhost are two sites. */
async function otherSite(html: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const host = board.hostname === "localhost" ? "127.0.0.1" : "localhost";
  return {
    url: `http://${host}:${port}/`,
    // The browser keeps its connection open; close it too, or this waits.
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function names(request: APIRequestContext): Promise<string[]> {
  const res = await request.get("/api/tool-servers");
  expect(res.status(), await res.text()).toBe(200);
  return ((await res.json()) as { name: string }[]).map((s) => s.name);
}

test("a page on another site cannot add an MCP server with a form, and the board's own form still can", async ({ page, request }) => {
  const tag = unique("x").split(" ")[1];
  const name = `evil-${tag}`.slice(0, 40);
  const marker = `/tmp/planboard-pwned-${tag}`;
  // An auto-submitting form with the Tools page's own fields: a stdio
  // server is a command the board starts.
  const site = await otherSite(`<!doctype html>
    <title>You won</title>
    <form id="attack" method="post" action="${board.origin}/tools/servers">
      <input name="name" value="${name}">
      <input name="command" value="touch">
      <textarea name="args">${marker}</textarea>
    </form>
    <script>addEventListener("load", () => document.getElementById("attack").submit());</script>`);
  try {
    const posted = page.waitForResponse(
      (r) => r.url() === `${board.origin}/tools/servers` && r.request().method() === "POST",
    );
    // Only until the page arrives: its form then navigates away.
    await page.goto(site.url, { waitUntil: "commit" });
    const answer = await posted;
    expect(answer.status()).toBe(403);
    await expect(page.locator("body")).toContainText("own pages");
  } finally {
    await site.close();
  }
  expect(await names(request)).not.toContain(name);
  expect(fs.existsSync(marker)).toBe(false);

  // The same form on the board's own Tools page works.
  const own = `own-${tag}`.slice(0, 40);
  await page.goto("/tools");
  await page.getByTestId("server-name-input").fill(own);
  await page.getByTestId("server-url-input").fill("http://127.0.0.1:9/mcp");
  await page.getByTestId("server-add-button").click();
  await page.waitForURL(/\/tools$/);
  const row = page.locator(`[data-testid="server-row"][data-name="${own}"]`);
  await expect(row).toHaveCount(1);
  expect(await names(request)).toContain(own);
  await row.getByTestId("server-remove").click();
  await page.waitForURL(/\/tools$/);
  await expect(row).toHaveCount(0);
});

test("a page on another site cannot create a plan with fetch", async ({ page, request }) => {
  const title = unique("Forged plan");
  const body = JSON.stringify({ title, subtasks: [{ name: "a" }] });
  const site = await otherSite(`<!doctype html>
    <title>Nothing to see</title>
    <script>
      const body = ${JSON.stringify(body)};
      // What a page may send anywhere without asking: JSON as text/plain,
      // no preflight, an answer it cannot read.
      window.simple = fetch(${JSON.stringify(`${board.origin}/api/plans`)}, {
        method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body,
      }).then(() => "sent", (e) => "failed: " + e);
      // Real JSON needs the board's leave (a CORS preflight), never given.
      window.cors = fetch(${JSON.stringify(`${board.origin}/api/plans`)}, {
        method: "POST", headers: { "content-type": "application/json" }, body,
      }).then((r) => "answered " + r.status, () => "blocked");
    </script>`);
  try {
    const posted = page.waitForResponse(
      (r) => r.url() === `${board.origin}/api/plans` && r.request().method() === "POST",
    );
    await page.goto(site.url);
    expect((await posted).status()).toBe(403);
    expect(await page.evaluate(() => (window as any).simple)).toBe("sent");
    expect(await page.evaluate(() => (window as any).cors)).toBe("blocked");
  } finally {
    await site.close();
  }
  const res = await request.get(`/api/plans?q=${encodeURIComponent(title)}`);
  expect(res.status()).toBe(200);
  expect((await res.json()).plans).toHaveLength(0);
});

test("a host name rebound to the board's address gets no page and no data", async () => {
  // evil.example's DNS answers with the board's address: the browser then
  // treats the board's pages as evil.example's own.
  const address = board.hostname === "localhost" ? "127.0.0.1" : board.hostname;
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-features=HttpsUpgrades",
      `--host-resolver-rules=MAP evil.example ${address}`,
    ],
  });
  try {
    const page = await browser.newPage();
    const rebound = `http://evil.example${board.port ? `:${board.port}` : ""}`;
    const home = await page.goto(`${rebound}/`);
    expect(home?.status()).toBe(403);
    await expect(page.locator("body")).toContainText("evil.example");
    await expect(page.locator("body")).toContainText("PLANBOARD_ALLOWED_HOSTS");
    const plans = await page.goto(`${rebound}/api/plans`);
    expect(plans?.status()).toBe(403);
    // The board's own address still answers in the same browser.
    const own = await page.goto(`${board.origin}/`);
    expect(own?.status()).toBe(200);
  } finally {
    await browser.close();
  }
});
