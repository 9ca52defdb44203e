// A benchmark, not a test: how the board behaves at 100, 2,000 and 5,000
// subtasks in Chromium (issue 23, part 3). Run it against a release server:
//   cargo leptos serve --release &   # then, in end2end/:
//   npx playwright test -c bench.config.ts scale
// Each size prints: the page's HTML size, load to interactive (the stream
// live, so the island hydrated), the DOM's node count, each view switch
// (a click to the view drawn, median of 3), and an edit made over the API
// until the board shows it (median of 10).
import { test, expect, type Page } from "@playwright/test";
import { createPlan, setState, unique } from "../tests/helpers";

test.setTimeout(600_000);

/** `n` subtasks in 50 lanes of chains of 10: each chain after the one
 * 50 chains before it, like a long plan of parallel work streams. */
function shape(n: number) {
  const subtasks = [];
  for (let i = 1; i <= n; i++) {
    const inChain = (i - 1) % 10;
    const dependencies = inChain > 0 ? [i - 1] : i > 500 ? [i - 500 + 9] : [];
    subtasks.push({ name: `step ${i} of the work`, description: `Do part ${i}.`, dependencies });
  }
  return subtasks;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function nodes(page: Page) {
  return page.evaluate(() => document.getElementsByTagName("*").length);
}

/** Clicks a tab and waits for the view to be drawn (and the browser to
 * have painted it: the next animation frame). */
async function switchTo(page: Page, tab: string, drawn: () => Promise<void>) {
  const t0 = Date.now();
  await page.getByTestId(`tab-${tab}`).click();
  await drawn();
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r(null))));
  return Date.now() - t0;
}

for (const n of [100, 2000, 5000]) {
  test(`a board of ${n} subtasks`, async ({ page, request }) => {
    const id = await createPlan(request, unique(`Scale ${n}`), shape(n), { approval_required: false });
    // Some history, as a running plan has: the first chain of each lane done.
    for (let lane = 1; lane <= Math.min(5, n / 10); lane++) {
      for (let k = 0; k < 10; k++) {
        const s = (lane - 1) * 10 + k + 1;
        await setState(request, id, s, "in_progress");
        await setState(request, id, s, "done");
      }
    }
    const t0 = Date.now();
    const response = await page.goto(`/plans/${id}?view=kanban`);
    const html = (await response!.body()).length;
    await expect(page.getByTestId("connection")).toHaveText("live", { timeout: 60_000 });
    const load = Date.now() - t0;
    const kanbanNodes = await nodes(page);

    const switches: Record<string, number[]> = { dag: [], timeline: [], gantt: [], kanban: [] };
    for (let round = 0; round < 3; round++) {
      switches.dag.push(await switchTo(page, "dag", () => page.getByTestId("dag").waitFor()));
      const dagNodes = await nodes(page);
      if (round === 0) console.log(`  ${n}: DAG DOM nodes ${dagNodes}`);
      switches.timeline.push(
        await switchTo(page, "timeline", () => page.getByTestId("timeline-entry").first().waitFor()),
      );
      switches.gantt.push(
        await switchTo(page, "gantt", async () => {
          await page.getByTestId("gantt").waitFor();
          await page.waitForFunction(() => {
            const img = document.querySelector("img.gantt") as HTMLImageElement | null;
            return !!img && img.complete && img.naturalWidth > 0;
          });
        }),
      );
      switches.kanban.push(
        await switchTo(page, "kanban", () => page.getByTestId("column-ready").waitFor()),
      );
    }

    // An edit over the API until its card stands in its new column.
    const ready = 51; // the second chain of lane 6 is waiting; 51 heads lane 6
    const edits: number[] = [];
    for (let i = 0; i < 10; i++) {
      const to = i % 2 === 0 ? "in_progress" : "todo";
      const column = to === "in_progress" ? "column-in_progress" : "column-ready";
      const t = Date.now();
      await setState(request, id, ready, to);
      await page.getByTestId(column).getByTestId(`card-${ready}`).waitFor();
      edits.push(Date.now() - t);
    }
    const line = [
      `${n} subtasks: HTML ${(html / 1024).toFixed(0)} KB`,
      `load to live ${load} ms`,
      `kanban DOM nodes ${kanbanNodes}`,
      ...Object.entries(switches).map(([v, xs]) => `→${v} ${median(xs)} ms (max ${Math.max(...xs)})`),
      `edit visible ${median(edits)} ms (max ${Math.max(...edits)})`,
    ].join(" · ");
    console.log(line);
  });
}
