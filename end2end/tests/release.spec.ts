import { expect, Page, test } from "@playwright/test";
import { createPlan, openBoard, unique } from "./helpers";

// Runs against the debug build in scripts/test's first end-to-end pass and
// against the release build as scripts/run serves it (a random port, a
// fresh database) in the second; see end2end/release.config.ts.

/** Same-origin requests of `page` that failed or answered 4xx/5xx. */
function watchFailures(page: Page): string[] {
  const failures: string[] = [];
  const origin = new URL(process.env.PLANBOARD_URL ?? "http://127.0.0.1:3000").origin;
  page.on("response", (response) => {
    const url = new URL(response.url());
    // The live streams end when a page is left; only files and pages count.
    if (url.origin === origin && response.status() >= 400 && !url.pathname.endsWith("/stream")) {
      failures.push(`${response.status()} ${url.pathname}`);
    }
  });
  page.on("requestfailed", (request) => {
    const url = new URL(request.url());
    const why = request.failure()?.errorText ?? "";
    if (url.origin === origin && !why.includes("ERR_ABORTED")) {
      failures.push(`failed ${url.pathname}: ${why}`);
    }
  });
  return failures;
}

test("every page asks only for files the build made, and the board comes alive on it", async ({ page, request }) => {
  const failures = watchFailures(page);
  const wasm: number[] = [];
  page.on("response", (response) => {
    if (response.url().endsWith(".wasm")) wasm.push(response.status());
  });
  const id = await createPlan(request, unique("Alive"), [{ name: "a" }, { name: "b", dependencies: [1] }]);
  for (const path of ["/", "/plans/new", "/inbox", "/history", "/reviews", "/memories", "/templates", "/settings", "/tools", `/plans/${id}/activity`]) {
    await page.goto(path);
    await page.waitForLoadState("networkidle");
  }
  await openBoard(page, id);
  expect(wasm.length, "the board's wasm was asked for").toBeGreaterThan(0);
  expect(wasm.every((status) => status === 200 || status === 304), `wasm answers: ${wasm}`).toBeTruthy();
  // The first click on the DAG tab after load draws the graph.
  await page.getByTestId("tab-dag").click();
  await expect(page.locator("svg.dag .node")).toHaveCount(2);
  expect(failures).toEqual([]);
});

test("a file the build did not make is a plain 404, never a page", async ({ request }) => {
  for (const path of ["/pkg/planboard_bg.wasm", "/pkg/nothing.css", "/favicon.ico"]) {
    const res = await request.get(path);
    expect(res.status(), path).toBe(404);
    expect(res.headers()["content-type"], path).toContain("text/plain");
    expect(await res.text(), path).toBe("not found\n");
  }
});
