import { APIRequestContext, expect, Page, test } from "@playwright/test";
import { shot, unique } from "./helpers";

// Issue 56: replay a run and compare the two, keep a run reviewed good as
// a regression case with checks, run the suite from the Cases page.
// scripts/test starts end2end/fake-openai.mjs: asked for another model
// than "fake", a [file] task's first subtask writes another file.

async function finishedRun(request: APIRequestContext, task: string) {
  const res = await request.post("/api/runs", { data: { task, mode: "simple", approval_required: false } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await expect
    .poll(async () => (await (await request.get(`/api/runs/${run.id}`)).json()).state, { timeout: 45_000 })
    .toBe("done");
  return run;
}

/** Reloads a suite run's report until it has ended; its state. */
async function suiteEnded(page: Page) {
  await expect
    .poll(
      async () => {
        await page.reload();
        return page.getByTestId("suite-summary").getAttribute("data-state");
      },
      { timeout: 60_000, intervals: [1_000] },
    )
    .not.toBe("running");
}

test("a person replays a run on another model and compares the two: both graphs, the first divergence, the answers and the totals", async ({ page, request }) => {
  test.setTimeout(120_000);
  const run = await finishedRun(request, unique("[file] Write up the first library"));
  const res = await request.post(`/api/runs/${run.id}/replay`, { data: { model: "fake-b", unmatched: "live" } });
  expect(res.status(), await res.text()).toBe(201);
  const replay = await res.json();
  expect(replay.config.replay.run).toBe(run.id);
  await expect
    .poll(async () => (await (await request.get(`/api/runs/${replay.id}`)).json()).state, { timeout: 45_000 })
    .toBe("done");
  // The replay's header links the two side by side.
  await page.goto(`/plans/${replay.plan_id}`);
  await expect(page.getByTestId("run-replay")).toBeVisible({ timeout: 15_000 });
  await page.getByTestId("run-compare").click();
  await page.waitForURL(/\/runs\/compare\?a=/);
  await expect(page.getByTestId("a-graph")).toBeVisible();
  await expect(page.getByTestId("b-graph")).toBeVisible();
  await expect(page.getByTestId("node-f1")).toHaveText("100 %");
  await expect(page.getByTestId("b-node-1")).toHaveAttribute("data-matched", "1");
  // The first divergence: the first subtask's reply writes another file.
  const divergence = page.getByTestId("divergence");
  await expect(divergence).toBeVisible();
  await expect(divergence.getByTestId("divergence-a")).toContainText("notes/first.md");
  await expect(divergence.getByTestId("divergence-b")).toContainText("notes/other.md");
  await expect(page.locator("svg .diverged")).toHaveCount(2);
  // Each step's result, the answers and the totals of both.
  await expect(page.getByTestId("compare-a").getByTestId("compare-step-result")).toHaveCount(3);
  await expect(page.getByTestId("compare-totals")).toContainText("Model calls");
  await expect(page.getByTestId("compare-totals")).toContainText("The final answer");
  await shot(page, "replay-compare");
  // History links a replay to its recorded run too.
  await page.goto("/history");
  await expect(page.getByTestId("history-compare").first()).toBeVisible();
});

test("a reviewer keeps a good run as a case with checks; the Cases page runs the suite, scores it, and shows a broken check's change", async ({ page, request }) => {
  test.setTimeout(180_000);
  const task = unique("Note what the first library says");
  const run = await finishedRun(request, task);
  const tag = unique("e2e").split(" ")[1];
  const name = unique("First library notes");
  await page.goto(`/plans/${run.plan_id}`);
  await page.getByTestId("verdict-good").check();
  // The review form's checks: the answer holds a text, step 1 was done.
  await page.getByTestId("keep-case").locator("summary").click();
  await page.getByTestId("keep-case-check").check();
  await page.getByTestId("keep-case-name").fill(name);
  await page.getByTestId("keep-case-tags").fill(tag);
  await page.getByTestId("check-kind-1").selectOption("answer_text");
  await page.getByTestId("check-text-1").fill("final answer");
  await page.getByTestId("check-kind-2").selectOption("step_done");
  await page.getByTestId("check-step-2").selectOption("1");
  await shot(page, "case-review-form");
  await page.getByTestId("review-save").click();
  await page.waitForURL(/\/cases#case-/);
  const card = page.getByTestId("case").filter({ hasText: name });
  await expect(card.getByTestId("case-check")).toHaveCount(2);
  await expect(card.getByTestId("case-check").last()).toContainText("look at the first");
  // The reviewed plan's board says it is a case now.
  await page.goto(`/plans/${run.plan_id}`);
  await expect(page.getByTestId("review-case")).toBeVisible();

  // Run the suite for this tag: it passes.
  await page.goto("/cases");
  await page.getByTestId("suite-tag").selectOption(tag);
  await page.getByTestId("run-suite").click();
  await page.waitForURL(/\/cases\/runs\/[0-9a-f-]{36}/);
  await suiteEnded(page);
  await expect(page.getByTestId("suite-summary")).toHaveAttribute("data-state", "done");
  const result = page.getByTestId("suite-result").filter({ hasText: name });
  await expect(result.getByTestId("case-outcome")).toHaveAttribute("data-outcome", "passed");
  await expect(result.getByTestId("result-check")).toHaveCount(2);
  await shot(page, "suite-report-passed");

  // A broken check: the next suite run fails the case, and the Cases page
  // leads with the change and where the run parted from the recording.
  await page.goto("/cases");
  const edit = page.getByTestId("case").filter({ hasText: name });
  await edit.getByTestId("case-edit").click();
  await edit.getByTestId("check-text-1").fill("no such words");
  await edit.getByTestId("case-save").click();
  await page.waitForURL(/\/cases#case-/);
  await page.getByTestId("suite-tag").selectOption(tag);
  await page.getByTestId("suite-unmatched").selectOption("live");
  await page.getByTestId("run-suite").click();
  await page.waitForURL(/\/cases\/runs\/[0-9a-f-]{36}/);
  await suiteEnded(page);
  const failed = page.getByTestId("suite-result").filter({ hasText: name });
  await expect(failed.getByTestId("case-outcome")).toHaveAttribute("data-outcome", "failed");
  await expect(failed.getByTestId("result-check").first()).toHaveAttribute("data-passed", "false");
  await page.goto("/cases");
  await expect(page.getByTestId("latest-score").first()).toBeVisible();
  await expect(page.getByTestId("changed-case").filter({ hasText: name })).toBeVisible();
  await expect(page.getByTestId("score-chart")).toBeVisible();
  await shot(page, "cases-page");

  // Retired: it stays listed, marked.
  await page.getByTestId("case").filter({ hasText: name }).getByTestId("case-retire").click();
  await page.waitForURL(/\/cases#case-/);
  await expect(page.getByTestId("case").filter({ hasText: name }).getByTestId("case-retired")).toBeVisible();
});
