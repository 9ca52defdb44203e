// A benchmark, not a test: where the board's load goes at 5,000 subtasks
// (issue 36 part 6), so an early tab click, which waits for the island to
// hydrate, can be made cheaper where it costs. Run it like scale.spec.ts
// (against a release build), e.g.
//   cd end2end && npx playwright test -c bench.config.ts hydration
// It loads the board three times and prints, per load: the page's HTML
// size, when the HTML and the wasm had arrived, when the island was live
// (the tabs marked `data-live`), the long tasks (> 50 ms) until then, and
// the functions that took the most time of the main thread (Chromium's
// sampling profiler, self time). Wasm functions are named only in a wasm
// built with its name section: for a breakdown, run `wasm-opt -g` (not
// plain `-Oz`) over the release build's wasm before serving it.
import { test, expect } from "@playwright/test";
import { createPlan, setState, unique } from "../tests/helpers";

test.setTimeout(600_000);
test.use({ viewport: { width: 1280, height: 800 } });

const N = Number(process.env.BENCH_SUBTASKS ?? 5000);

/** The same shape as scale.spec.ts: 50 lanes of chains of 10. */
function shape(n: number) {
  const subtasks = [];
  for (let i = 1; i <= n; i++) {
    const inChain = (i - 1) % 10;
    const dependencies = inChain > 0 ? [i - 1] : i > 500 ? [i - 500 + 9] : [];
    subtasks.push({ name: `step ${i} of the work`, description: `Do part ${i}.`, dependencies });
  }
  return subtasks;
}

type Node = { id: number; callFrame: { functionName: string; url: string }; children?: number[] };

test(`where a board of ${N} subtasks spends its load`, async ({ page, request }) => {
  const id = await createPlan(request, unique(`Hydration ${N}`), shape(N), { approval_required: false });
  for (let s = 1; s <= 50; s++) {
    await setState(request, id, s, "in_progress");
    await setState(request, id, s, "done");
  }
  // Long tasks and the moment the island is live, recorded by the page.
  await page.addInitScript(() => {
    const w = window as any;
    w.__long = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__long.push([Math.round(e.startTime), Math.round(e.duration)]);
    }).observe({ type: "longtask", buffered: true });
    const seen = () => {
      if (w.__live === undefined && document.querySelector("nav.tabs[data-live]")) w.__live = performance.now();
    };
    new MutationObserver(seen).observe(document, { subtree: true, attributes: true, childList: true });
  });
  const cdp = await page.context().newCDPSession(page);
  // The same origin first, so the board's load stays in this renderer
  // (and this profiler) instead of a new process.
  await page.goto("/robots.txt");
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
  for (let round = 0; round < 3; round++) {
    await cdp.send("Profiler.start");
    const response = await page.goto(`/plans/${id}?view=kanban`);
    const html = (await response!.body()).length;
    await expect(page.getByTestId("connection")).toHaveText("live", { timeout: 60_000 });
    await page.waitForFunction(() => (window as any).__live !== undefined);
    const { profile } = await cdp.send("Profiler.stop");
    const t = await page.evaluate(() => {
      const w = window as any;
      const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
      const wasm = performance
        .getEntriesByType("resource")
        .find((r) => r.name.endsWith(".wasm")) as PerformanceResourceTiming | undefined;
      return {
        htmlEnd: Math.round(nav.responseEnd),
        domContentLoaded: Math.round(nav.domContentLoadedEventEnd),
        wasmEnd: wasm ? Math.round(wasm.responseEnd) : -1,
        live: Math.round(w.__live),
        long: w.__long as [number, number][],
      };
    });
    // Self time per function (by name and file), from the samples.
    const nodes = new Map<number, Node>((profile.nodes as Node[]).map((n) => [n.id, n]));
    const self = new Map<string, number>();
    const samples = profile.samples ?? [];
    const deltas = profile.timeDeltas ?? [];
    for (let i = 0; i < samples.length; i++) {
      const f = nodes.get(samples[i])!.callFrame;
      const file = f.url.startsWith("wasm://") ? "(wasm)" : f.url.split("/").pop() || "";
      const key = `${f.functionName || "(anonymous)"} ${file}`.trim();
      self.set(key, (self.get(key) ?? 0) + (deltas[i + 1] ?? 0) / 1000);
    }
    const top = [...self.entries()]
      .filter(([k]) => k !== "(idle)")
      .sort((a, b) => b[1] - a[1])
      .slice(0, 25)
      .map(([k, ms]) => `    ${ms.toFixed(1).padStart(7)} ms  ${k.slice(0, 140)}`);
    const wasmMs = [...self.entries()].filter(([k]) => k.includes("wasm")).reduce((a, [, ms]) => a + ms, 0);
    console.log(
      [
        `${N} subtasks, load ${round + 1}: HTML ${(html / 1024).toFixed(0)} KB; HTML in at ${t.htmlEnd} ms, ` +
          `DOMContentLoaded ${t.domContentLoaded} ms, wasm in at ${t.wasmEnd} ms, island live at ${t.live} ms`,
        `  long tasks until live (start, ms): ${t.long
          .filter(([s]) => s <= t.live)
          .map(([s, d]) => `${s}+${d}`)
          .join(", ")}`,
        `  in wasm (self): ${wasmMs.toFixed(0)} ms; the top functions by self time:`,
        ...top,
      ].join("\n"),
    );
  }
});
