import { APIRequestContext, expect, Page, test } from "@playwright/test";
import { shot, unique } from "./helpers";

// Issue 55: approvals a team can trust. The fake model (fake-openai.mjs)
// plans a [card] task with a step naming run_shell, a step that reads a
// file nobody gave, and a step with no expected outcome.

/** Starts a run of the agent; returns its id and its plan's. */
async function startRun(request: APIRequestContext, data: Record<string, unknown>) {
  const res = await request.post("/api/runs", { data });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  return { run: run.id as string, plan: run.plan_id as string };
}

async function waitForState(request: APIRequestContext, run: string, state: string) {
  await expect
    .poll(async () => (await (await request.get(`/api/runs/${run}`)).json()).state, { timeout: 30_000 })
    .toBe(state);
}

/** Opens the plan's board in Chinese. */
async function inChinese(page: Page, plan: string) {
  await page.goto(`/lang/zh?back=${encodeURIComponent(`/plans/${plan}`)}`);
  await expect(page.locator("html")).toHaveAttribute("lang", "zh");
}

test("the card before approving shows the checks, the forecast and the tools that ask, and a grant stops the asking", async ({ page, request }) => {
  const { run, plan } = await startRun(request, {
    task: unique("[card] Compare two libraries"),
    mode: "complex",
    policies: { run_shell: "ask" },
  });
  await page.goto(`/plans/${plan}`);
  await expect(page.getByTestId("run-state")).toHaveText("waiting for approval", { timeout: 20_000 });
  const card = page.getByTestId("approval-card");
  await expect(card).toBeVisible();
  await expect(card.getByTestId("card-forecast")).toContainText("model calls");
  await expect(card.getByTestId("card-forecast")).toContainText("budget");
  const checks = card.getByTestId("plan-check");
  await expect(checks.filter({ hasText: "reads data.csv" })).toHaveCount(1);
  await expect(card.locator('[data-kind="unconnected"]')).toContainText("#2");
  await expect(card.locator('[data-kind="no_outcome"]')).toContainText("#2");
  await expect(card.getByTestId("card-tool-run_shell")).toContainText("steps #1");
  await shot(page, "approvals-1-card");
  // Approved with run_shell granted for the run: its call does not ask.
  await card.getByTestId("grant-run_shell").check();
  await card.getByTestId("card-approve").click();
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 30_000 });
  await expect(page.getByTestId("tool-guard-run_shell")).toHaveCount(0);
  await expect(page.getByTestId("run-grants")).toContainText("run_shell");
  await expect(page.getByTestId("run-grant").first()).toContainText("granted by");
  await expect(page.getByTestId("run-forecast")).toContainText("Forecast at approval");
  await shot(page, "approvals-2-granted");
  // Every decision is a record: the plan's approval and the grant.
  await page.goto(`/approvals?run=${run}`);
  const rows = page.getByTestId("approval-row");
  await expect(rows.locator('[data-testid="approval-on"]').filter({ hasText: "grant run_shell" })).toHaveCount(1);
  await expect(page.locator('[data-testid="approval-row"][data-kind="plan"]')).toHaveCount(1);
  await expect(page.getByTestId("approval-digest").first()).toHaveAttribute("title", /^[0-9a-f]{64}$/);
  await shot(page, "approvals-3-records");
});

test("the card and the records read in Chinese", async ({ page, request }) => {
  const { run, plan } = await startRun(request, {
    task: unique("[card] 比较两个库"),
    mode: "complex",
    policies: { run_shell: "ask" },
  });
  await waitForState(request, run, "awaiting_approval");
  await inChinese(page, plan);
  const card = page.getByTestId("approval-card");
  await expect(card).toContainText("批准前", { timeout: 20_000 });
  await expect(card.getByTestId("plan-check").filter({ hasText: "读取 data.csv" })).toHaveCount(1);
  await expect(card.getByTestId("card-forecast")).toContainText("次模型调用");
  await expect(card.getByTestId("card-tool-run_shell")).toContainText("每次调用前都需人工批准");
  await card.getByTestId("card-hold").selectOption("click");
  await card.getByTestId("card-approve").click();
  await expect(page.getByTestId("run-held")).toContainText("批准并暂缓", { timeout: 20_000 });
  await shot(page, "approvals-4-held-zh");
  await page.getByTestId("run-start").click();
  // run_shell was not granted: it asks a person, who approves it.
  const guard = page.getByTestId("tool-guard-run_shell");
  await expect(guard).toBeVisible({ timeout: 20_000 });
  await guard.getByTestId("tool-guard-approve").click();
  await expect(page.getByTestId("run-state")).toHaveText("已完成", { timeout: 30_000 });
  await page.goto(`/approvals?run=${run}`);
  await expect(page.getByRole("heading", { name: "批准记录" })).toBeVisible();
  await expect(page.locator('[data-testid="approval-row"][data-kind="tool_call"]')).toHaveCount(1);
});

for (const lang of ["en", "zh"]) {
  test(`a plan that drifted from the approved version waits to be approved again (${lang})`, async ({ page, request }) => {
    const { run, plan } = await startRun(request, { task: unique("Write the drift report"), mode: "simple" });
    await waitForState(request, run, "awaiting_approval");
    const held = await request.post(`/api/plans/${plan}/approve`, { data: { hold: true } });
    expect(held.status(), await held.text()).toBe(200);
    await waitForState(request, run, "paused");
    // Four steps added to the approved three while it was held.
    for (const name of ["translate the findings", "print the posters", "book the venue", "invite the press"]) {
      const res = await request.post(`/api/plans/${plan}/subtasks`, { data: { subtask: { name, expected_outcome: "done" } } });
      expect(res.ok(), await res.text()).toBeTruthy();
    }
    const started = await request.post(`/api/runs/${run}/start`, { data: {} });
    expect(started.status(), await started.text()).toBe(200);
    await expect
      .poll(async () => (await (await request.get(`/api/runs/${run}`)).json()).drift?.similarity ?? null, { timeout: 20_000 })
      .not.toBeNull();
    if (lang === "zh") {
      await inChinese(page, plan);
    } else {
      await page.goto(`/plans/${plan}`);
    }
    const drift = page.getByTestId("run-drift");
    await expect(drift).toContainText(lang === "zh" ? "计划偏离了已批准的版本" : "The plan drifted from the version approved", { timeout: 20_000 });
    await expect(drift.getByTestId("drift-compare")).toHaveAttribute("href", new RegExp(`/plans/${plan}/compare\\?from=\\d+&to=\\d+`));
    await shot(page, `approvals-5-drift-${lang}`);
    await drift.getByTestId("run-reapprove").click();
    await expect(page.getByTestId("run-state")).toHaveText(lang === "zh" ? "已完成" : "done", { timeout: 30_000 });
    const records = await (await request.get(`/api/approvals?run=${run}&kind=reapproval`)).json();
    expect(records.length).toBe(1);
    await page.goto(`/approvals?run=${run}`);
    await expect(page.locator('[data-testid="approval-row"][data-kind="reapproval"]')).toHaveCount(1);
  });
}

test("the insights page measures how people decide, in both languages", async ({ page, request }) => {
  // At least one decision to measure: a plan approved by the local user.
  const { run, plan } = await startRun(request, { task: unique("Say hello for the insights"), mode: "simple" });
  await waitForState(request, run, "awaiting_approval");
  const approved = await request.post(`/api/plans/${plan}/approve`, { data: {} });
  expect(approved.status(), await approved.text()).toBe(200);
  await page.goto("/history");
  await page.getByTestId("history-approvals").click();
  await page.waitForURL(/\/approvals$/);
  await page.getByTestId("approvals-insights-link").click();
  await page.waitForURL(/\/approvals\/insights$/);
  await expect(page.getByRole("heading", { name: "Approval insights" })).toBeVisible();
  await expect(page.getByTestId("insights-people").getByTestId("insights-people-row").first()).toBeVisible();
  await expect(page.getByTestId("insights-records")).toContainText("decisions of the last 90 days");
  await expect(page.getByTestId("insights-forecasts")).toContainText("finished runs");
  await shot(page, "approvals-6-insights");
  await page.getByTestId("lang-switch").click();
  await expect(page.locator("html")).toHaveAttribute("lang", "zh");
  await expect(page.getByRole("heading", { name: "批准分析" })).toBeVisible();
  await expect(page.getByTestId("insights-records")).toContainText("个决定");
  await shot(page, "approvals-7-insights-zh");
});
