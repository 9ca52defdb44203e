import * as path from "path";
import { expect, test } from "@playwright/test";
import { createPlan, openBoard, shot, unique } from "./helpers";

// scripts/test starts end2end/fake-openai.mjs and points the server at it.

test("a person gives the agent a task, approves its plan and reads the answer", async ({ page }) => {
  await page.goto("/plans/new");
  await expect(page.getByTestId("agent-model")).toContainText("fake");
  // What waits for a person now (earlier stories may have left plans waiting).
  const before = Number(await page.getByTestId("needs-count").textContent());
  const task = unique("Compare two libraries and combine the findings");
  await page.getByTestId("task-input").fill(task);
  await page.getByTestId("task-tokens").fill("50000");
  await page.getByTestId("task-cost").fill("5");
  await shot(page, "agent-1-task-box");
  await page.getByTestId("start-task").click();
  await page.waitForURL(/\/plans\/[0-9a-f-]{36}/);
  await expect(page.getByTestId("connection")).toHaveText("live");
  await expect(page.getByTestId("run-state")).toHaveText("waiting for approval", { timeout: 15_000 });
  await expect(page.getByTestId("run-mode")).toContainText("model");
  await expect(page.getByTestId("run-why")).toContainText("parallel");
  await expect(page.getByTestId("plan-title")).toHaveText("Compare and combine");
  // The classifier's and planner's replies streamed, then were recorded.
  await expect(page.getByTestId("run-live")).toHaveCount(0);
  await shot(page, "agent-2-awaiting-approval");
  // The top bar counts the plan waiting; "Needs you" lists it and leads back.
  await expect(page.getByTestId("needs-count")).toHaveText(String(before + 1));
  await page.getByTestId("nav-inbox").click();
  await page.waitForURL(/\/inbox$/);
  await expect(page.locator('[data-kind="approval"]').getByTestId("need-link").last()).toBeVisible();
  await shot(page, "agent-2b-needs-you");
  const link = page.locator('[data-kind="approval"]').getByTestId("need-link").last();
  await expect(link).toHaveText("Compare and combine");
  const planUrl = await link.getAttribute("href");
  await link.click();
  await page.waitForURL((url) => url.pathname === planUrl);
  await expect(page.getByTestId("connection")).toHaveText("live");
  await page.getByTestId("approve").click();
  // Approved: it waits for nobody any more.
  await expect(page.getByTestId("needs-count")).toHaveText(String(before));
  await expect(page.getByTestId("run-state")).toHaveText("running", { timeout: 10_000 });
  // The executors' replies appear as the model writes them.
  await expect(page.getByTestId("run-live").first()).toContainText("executor #", { timeout: 10_000 });
  await shot(page, "agent-3-running");
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 20_000 });
  // The budget typed in the task box, the time it ran against its limit,
  // and a full progress bar.
  await expect(page.getByTestId("run-spent")).toContainText("/ 50000 tokens");
  // Priced by the operator's table (scripts/test: fake at $2.50 / $10 per
  // million tokens; each fake call is 120 + 30 tokens, $0.0006).
  await expect(page.getByTestId("run-cost")).toHaveText(/^\$0\.\d{4} \/ \$5\.00$/);
  await expect(page.getByTestId("run-time")).toContainText(" / 30:00");
  await expect(page.getByTestId("run-progress")).toHaveAttribute("aria-valuenow", "100");
  const answer = page.getByTestId("run-answer");
  await expect(answer).toContainText("The final answer <b>not bold</b><script>");
  expect(await page.evaluate(() => (window as unknown as { pwned?: boolean }).pwned)).toBeUndefined();
  await expect(page.getByTestId("plan-state")).toHaveText(/done/i);
  await expect(page.getByTestId("run-live")).toHaveCount(0);
  await shot(page, "agent-4-done");
  // The Gantt view: the two independent subtasks ran at the same time.
  await page.getByTestId("tab-gantt").click();
  const gantt = page.getByTestId("gantt");
  await expect(gantt).toBeVisible();
  await expect.poll(() => gantt.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBeGreaterThan(0);
  const svg = await (await page.request.get(page.url().split("?")[0] + "/gantt.svg")).text();
  expect(svg).toMatch(/data-cost="\$0\.\d{4}"/);
  const bar = (id: number) => {
    const m = svg.match(new RegExp(`data-subtask="${id}" data-start="(\\d+)" data-end="(\\d+)"`));
    expect(m, svg).not.toBeNull();
    return [Number(m![1]), Number(m![2])];
  };
  const [a1, a2] = bar(1);
  const [b1, b2] = bar(2);
  const [c1] = bar(3);
  expect(Math.max(a1, b1)).toBeLessThan(Math.min(a2, b2));
  expect(c1).toBeGreaterThanOrEqual(Math.max(a2, b2));
  expect(svg).toContain("data-tokens=");
  await shot(page, "agent-7-gantt");
  // The activity page: every model call, its messages folded out on demand.
  await page.getByTestId("run-activity").click();
  await page.waitForURL(/\/activity$/);
  const rows = page.getByTestId("activity-row");
  await expect(rows.filter({ hasText: "executor" }).first()).toBeVisible();
  await expect(rows.filter({ hasText: "compiler" }).first()).toContainText("tokens");
  await rows.filter({ hasText: "compiler" }).first().locator("summary").click();
  await expect(rows.filter({ hasText: "compiler" }).first().locator("pre")).toContainText("[reply]");
  await shot(page, "agent-8-activity");
  await page.getByTestId("activity-who").getByText("#2", { exact: true }).first().click();
  await page.waitForURL(/activity\?subtask=2$/);
  const who = await page.getByTestId("activity-who").allTextContents();
  expect(who.length).toBeGreaterThan(0);
  expect(new Set(who)).toEqual(new Set(["#2"]));
});

test("a person pauses, resumes and cancels the agent from the board", async ({ page, request }) => {
  const res = await request.post("/api/runs", { data: { task: unique("[slow] Pause me"), mode: "simple", approval_required: false } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await page.goto(`/plans/${run.plan_id}`);
  await expect(page.getByTestId("connection")).toHaveText("live");
  await expect(page.getByTestId("run-state")).toHaveText("running", { timeout: 15_000 });
  await page.getByTestId("run-pause").click();
  await expect(page.getByTestId("run-state")).toHaveText("paused", { timeout: 10_000 });
  await expect(page.getByTestId("plan-state")).toHaveText(/paused/i);
  await shot(page, "agent-5b-paused");
  await page.getByTestId("run-resume").click();
  await expect(page.getByTestId("run-state")).toHaveText("running", { timeout: 10_000 });
  await expect(page.getByTestId("plan-state")).toHaveText(/running/i);
  await page.getByTestId("run-cancel").click();
  await expect(page.getByTestId("run-state")).toHaveText("cancelled", { timeout: 10_000 });
});

test("a run paused by its budget says which budget on the board, and a person raises it and resumes in one step", async ({ page, request }) => {
  // Two calls: the planner's and the first executor turn; then the budget pauses the run.
  const res = await request.post("/api/runs", { data: { task: unique("Say hello on a budget"), mode: "simple", approval_required: false, budget: { max_llm_calls: 2 } } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await page.goto(`/plans/${run.plan_id}`);
  await expect(page.getByTestId("run-state")).toHaveText("paused", { timeout: 15_000 });
  await expect(page.getByTestId("budget-reached")).toContainText("LLM calls (budget 2)");
  // The header tells the reason once, and offers no plain Resume (it
  // would pause again at once): only "Raise and resume".
  expect((await page.getByTestId("run-header").innerText()).split("(budget 2)")).toHaveLength(2);
  await expect(page.getByTestId("run-resume")).toHaveCount(0);
  await expect(page.getByTestId("raise-budget")).toBeVisible();
  // The suggestion doubles what was reached.
  await expect(page.getByTestId("budget-calls")).toHaveValue("4");
  await shot(page, "agent-5c-budget-reached");
  await page.getByTestId("budget-calls").fill("40");
  await page.getByTestId("raise-budget").click();
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 20_000 });
  await expect(page.getByTestId("run-budget")).toHaveCount(0);
  const view = await (await request.get(`/api/runs/${run.id}`)).json();
  expect(view.config.budget.max_llm_calls).toBe(40);
});

test("a person hands a plan made by hand to the agent, approves it and sees it worked as written", async ({ page, request }) => {
  const made = await request.post("/api/plans", { data: { title: unique("Hand-made release"), approval_required: true, subtasks: [{ name: "build the release" }, { name: "ship it", dependencies: [1] }] } });
  expect(made.status(), await made.text()).toBe(201);
  const plan = (await made.json()).plan;
  await page.goto(`/plans/${plan.id}`);
  await expect(page.getByTestId("connection")).toHaveText("live");
  // The offer sits above the board, where a person looks first.
  await expect(page.getByTestId("agent-work-start")).toBeInViewport();
  const offer = (await page.getByTestId("agent-work").boundingBox())!;
  const board = (await page.getByTestId("board").boundingBox())!;
  expect(offer.y + offer.height).toBeLessThanOrEqual(board.y);
  await shot(page, "agent-5d-hand-made-plan");
  await page.getByTestId("agent-work-start").click();
  await page.waitForURL((url) => url.pathname === `/plans/${plan.id}`);
  await expect(page.getByTestId("run-state")).toHaveText("waiting for approval", { timeout: 15_000 });
  await expect(page.getByTestId("agent-work")).toHaveCount(0);
  await page.getByTestId("approve").click();
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 20_000 });
  await expect(page.locator("article.card")).toHaveCount(2);
  await expect(page.locator("article.card").first()).toContainText("build the release");
});

test("the agent's question shows on its card and in the banner, and the answer lets it go on", async ({ page, request }) => {
  const res = await request.post("/api/runs", { data: { task: unique("[ask] Compare two libraries"), mode: "complex", approval_required: false } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await page.goto(`/plans/${run.plan_id}`);
  await expect(page.getByTestId("connection")).toHaveText("live");
  const question = page.getByTestId("question-1");
  await expect(question).toContainText("Which of the two libraries do you mean first?", { timeout: 15_000 });
  await expect(page.getByTestId("card-1")).toContainText("Which of the two libraries");
  await shot(page, "agent-5-question");
  await question.getByTestId("answer-input").fill("The <i>first</i> one, please");
  await question.getByTestId("answer-send").click();
  await expect(page.getByTestId("question-1")).toHaveCount(0, { timeout: 10_000 });
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 20_000 });
  const comments = await (await request.get(`/api/plans/${run.plan_id}/comments`)).json();
  expect(JSON.stringify(comments)).toContain("The <i>first</i> one, please");
});

test("a failing subtask is tried again by the agent, then offers Retry and Skip; skipping it lets the stuck run finish", async ({ page, request }) => {
  // [fail]: the first subtask always fails; the planner gives up on it.
  const res = await request.post("/api/runs", {
    data: { task: unique("[fail] Compare two libraries"), mode: "complex", approval_required: false, max_attempts: 2, retry_delay_ms: 500 },
  });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await page.goto(`/plans/${run.plan_id}`);
  await expect(page.getByTestId("connection")).toHaveText("live");
  await page.getByTestId("live-activity-toggle").click();
  const panel = page.getByTestId("live-activity");
  // The agent's own second attempt, with its countdown, before any person.
  await expect(panel.getByTestId("activity-row").filter({ hasText: "attempt 1 of 2 failed" }).first()).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId("retry-1")).toBeVisible({ timeout: 15_000 });
  await expect(panel.getByTestId("activity-row").filter({ hasText: "give_up · only a person can say where the documentation is" }).first()).toBeVisible();
  await expect(page.getByTestId("skip-1")).toBeVisible();
  await expect(page.getByTestId("card-1")).toContainText("documentation cannot be read");
  await expect(page.getByTestId("run-reason")).toBeVisible({ timeout: 15_000 });
  await shot(page, "agent-6-stuck");
  await page.getByTestId("skip-1").click();
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 20_000 });
  await expect(page.getByTestId("card-1")).toContainText("skipped on the board");
});

test("the Chinese UI shows the run, its live parts and its Gantt view", async ({ page, request }) => {
  const res = await request.post("/api/runs", { data: { task: unique("[file] 比较两个库并总结"), mode: "complex" } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await page.goto(`/plans/${run.plan_id}`);
  await page.getByTestId("lang-switch").click();
  await expect(page.locator("html")).toHaveAttribute("lang", "zh");
  await expect(page.getByTestId("connection")).toHaveText("实时");
  await expect(page.getByTestId("run-state")).toHaveText("等待批准", { timeout: 15_000 });
  await expect(page.getByTestId("run-mode")).toContainText("智能体 · 模式");
  await expect(page.getByTestId("run-mode")).toContainText("人工选择");
  await page.getByTestId("approve").click();
  await expect(page.getByTestId("run-live").first()).toContainText("正在生成", { timeout: 10_000 });
  await expect(page.getByTestId("run-state")).toHaveText("已完成", { timeout: 20_000 });
  await expect(page.getByTestId("run-answer")).toContainText("答案");
  await page.getByTestId("tab-gantt").click();
  await expect(page.getByTestId("gantt")).toBeVisible();
  const svg = await (await page.request.get(`/plans/${run.plan_id}/gantt.svg`)).text();
  expect(svg).toContain("#3 combine");
  await shot(page, "agent-9-zh");
  await page.getByTestId("run-activity").click();
  await expect(page.getByRole("heading", { name: "智能体活动" })).toBeVisible();
  // The file the agent wrote is listed with a download link.
  const file = page.getByTestId("artifact");
  await expect(file).toHaveText("notes/first.md");
  const download = await page.request.get((await file.getAttribute("href"))!);
  expect(download.status()).toBe(200);
  expect(await download.text()).toContain("# The first library");
  await expect(page.getByTestId("activity-row").filter({ hasText: "write_file" }).first()).toContainText("ok");
  await shot(page, "agent-10-activity-zh");
});

test("before approving, a person has the task re-planned in another mode", async ({ page, request }) => {
  const res = await request.post("/api/runs", { data: { task: unique("[slow] Compare two libraries"), mode: "complex" } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await page.goto(`/plans/${run.plan_id}`);
  await expect(page.getByTestId("connection")).toHaveText("live");
  await expect(page.getByTestId("run-state")).toHaveText("waiting for approval", { timeout: 20_000 });
  await page.getByTestId("replan-mode").selectOption("simple");
  await page.getByTestId("replan").click();
  await expect(page.getByTestId("run-state")).toHaveText("planning", { timeout: 10_000 });
  await expect(page.getByTestId("run-state")).toHaveText("waiting for approval", { timeout: 20_000 });
  await expect(page.getByTestId("run-mode")).toContainText("mode simple");
  await expect(page.getByTestId("run-mode")).toContainText("chosen by a person");
  await expect(page.getByTestId("plan-state")).toHaveText(/awaiting approval/i);
  await shot(page, "agent-11-replanned");
  await page.getByTestId("run-cancel").click();
  await expect(page.getByTestId("run-state")).toHaveText("cancelled", { timeout: 10_000 });
});

test("the plans list and history tell the agent's plans from the others, with the run's state", async ({ page, request }) => {
  const res = await request.post("/api/runs", { data: { task: unique("[slow] List me"), mode: "simple", approval_required: false } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  const manual = await createPlan(request, unique("Made by hand"), [{ name: "only step" }]);
  await expect.poll(async () => (await (await request.get(`/api/runs/${run.id}`)).json()).state, { timeout: 15_000 }).toBe("running");
  const row = (id: string) => page.locator(`tr:has(a[href^="/plans/${id}"])`);
  await page.goto("/?by=agent");
  await expect(page.getByTestId("by")).toHaveValue("agent");
  await expect(row(run.plan_id)).toHaveCount(1);
  await expect(row(manual)).toHaveCount(0);
  await expect(row(run.plan_id).getByTestId("plan-run")).toHaveText("agent: running");
  // The list follows the stream: the subtask the agent works on shows up.
  await expect(row(run.plan_id).getByTestId("working-on")).toContainText("working on ");
  await shot(page, "agent-12-plans-list");
  await page.goto("/?by=manual");
  await expect(row(manual)).toHaveCount(1);
  await expect(row(run.plan_id)).toHaveCount(0);
  const cancel = await request.post(`/api/runs/${run.id}/cancel`);
  expect(cancel.ok(), await cancel.text()).toBeTruthy();
  // The agent ends the run as it hears the plan abandoned; History is a
  // page rendered once, so it is opened after that.
  await expect.poll(async () => (await (await request.get(`/api/runs/${run.id}`)).json()).state, { timeout: 10_000 }).toBe("cancelled");
  await page.goto("/history?by=agent&mode=simple");
  await expect(page.getByTestId("history-mode")).toHaveValue("simple");
  await expect(row(run.plan_id).getByTestId("history-run")).toHaveText("cancelled");
  await expect(row(run.plan_id).getByTestId("history-tokens")).toHaveText(/^[1-9][0-9]*$/);
  await expect(row(manual)).toHaveCount(0);
  await shot(page, "agent-13-history");
});

test("the board's activity panel follows the run live and counts down to a retry", async ({ page, request }) => {
  // [retry]: the fake model rate-limits the first subtask's first call
  // with Retry-After: 8.
  const res = await request.post("/api/runs", { data: { task: unique("[retry] Watch me"), mode: "complex", approval_required: false } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await page.goto(`/plans/${run.plan_id}`);
  await expect(page.getByTestId("connection")).toHaveText("live");
  await page.getByTestId("live-activity-toggle").click();
  const panel = page.getByTestId("live-activity");
  await expect(panel).toContainText("whole run");
  const countdown = panel.getByTestId("retry-countdown");
  await expect(countdown).toBeVisible({ timeout: 15_000 });
  await expect(panel.getByTestId("activity-row").filter({ hasText: "retry scheduled" }).first()).toBeVisible();
  // The count runs in CSS: the animated property goes down by itself.
  const left = () => countdown.evaluate((el) => Number(getComputedStyle(el).getPropertyValue("--left")));
  const before = await left();
  expect(before).toBeGreaterThan(0);
  await expect.poll(left, { timeout: 5_000 }).toBeLessThan(before);
  // The run's clock ticks by the second while it waits, in CSS too: m:ss
  // counters drawn from the animated seconds.
  const clock = page.getByTestId("run-clock");
  const elapsed = () => clock.evaluate((el) => Number(getComputedStyle(el).getPropertyValue("--elapsed")));
  const from = await elapsed();
  await expect.poll(elapsed, { timeout: 5_000 }).toBeGreaterThan(from);
  // Minutes and seconds add up at any time: from 2:05 on, say.
  const parts = () => clock.evaluate((el) => {
    el.style.setProperty("--from", "125");
    const css = getComputedStyle(el);
    return ["--elapsed", "--clock-m", "--clock-s"].map((p) => Number(css.getPropertyValue(p)));
  });
  const [t, m, sec] = await parts();
  expect(t).toBeGreaterThanOrEqual(125);
  expect(m).toBe(Math.floor(t / 60));
  expect(sec).toBe(t - 60 * m);
  await shot(page, "agent-14-live-activity-retry");
  // Without a reload, the panel shows the subtasks' results as they come.
  await expect(panel.getByTestId("activity-row").filter({ hasText: "done: look at the first" }).first()).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 30_000 });
  // A selected subtask narrows the panel to its own lines.
  await page.getByTestId("open-2").click();
  await expect(panel).toContainText("#2");
  await expect.poll(async () => new Set(await panel.getByTestId("activity-who").allTextContents())).toEqual(new Set(["#2"]));
  await shot(page, "agent-15-live-activity-subtask");
});

test("a person rejects the agent's plan with a comment and sees the revision marked, then approves it", async ({ page, request }) => {
  const res = await request.post("/api/runs", { data: { task: unique("Compare two libraries"), mode: "complex", approval_required: true } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await page.goto(`/plans/${run.plan_id}`);
  await expect(page.getByTestId("connection")).toHaveText("live");
  await expect(page.getByTestId("run-state")).toHaveText("waiting for approval", { timeout: 15_000 });
  await expect(page.getByTestId("revision")).toHaveCount(0);
  await page.getByTestId("approval-comment").fill("Check their licences too");
  await page.getByTestId("reject").click();
  // The planner answers the comment; the revised plan replaces the old one
  // in place, its differences marked.
  await expect(page.getByTestId("plan-title")).toHaveText("Compare, check licences and write up", { timeout: 15_000 });
  const revision = page.getByTestId("revision");
  await expect(revision).toContainText("+ check their licences");
  await expect(revision).toContainText("+ write the comparison");
  await expect(revision).toContainText("~ look at the second");
  await expect(revision).toContainText("− combine");
  await expect(revision).not.toContainText("look at the first");
  await expect(page.locator('[data-revised="added"]')).toHaveCount(2);
  await expect(page.locator('[data-revised="changed"]')).toHaveCount(1);
  await shot(page, "agent-16-revised-plan");
  await page.getByTestId("approve").click();
  await expect(page.getByTestId("revision")).toHaveCount(0);
  await expect(page.locator("[data-revised]")).toHaveCount(0);
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 30_000 });
});

test("a person gives the agent a file and a choice of tools; the workspace shows the file with a preview and downloads as a zip", async ({ page, request }) => {
  await page.goto("/plans/new");
  const task = unique("Total the sales per region");
  await page.getByTestId("task-input").fill(task);
  await page.getByTestId("task-files").setInputFiles({
    name: "sales.csv",
    mimeType: "text/csv",
    buffer: Buffer.from("region,amount\nnorth,3\nsouth,4\n"),
  });
  // Every tool is ticked; the person leaves the web out of this run.
  await expect(page.getByTestId("task-tool-read_file")).toBeChecked();
  await page.getByTestId("task-tool-fetch_url").uncheck();
  await shot(page, "agent-12-task-files");
  await page.getByTestId("start-task").click();
  await page.waitForURL(/\/plans\/[0-9a-f-]{36}/);
  const plan = page.url().split("/plans/")[1].split(/[?#]/)[0];
  await expect(page.getByTestId("run-state")).toHaveText("waiting for approval", { timeout: 15_000 });
  const runs = await (await request.get(`/api/runs?plan=${plan}`)).json();
  expect(runs[0].config.inputs[0]).toMatchObject({ path: "sales.csv", bytes: 30 });
  expect(runs[0].config.tools).toContain("read_file");
  expect(runs[0].config.tools).not.toContain("fetch_url");
  await page.getByTestId("run-activity").click();
  await page.waitForURL(/\/activity$/);
  const file = page.getByTestId("artifact");
  await expect(file).toHaveText("sales.csv");
  await page.locator(".file-preview summary").first().click();
  await expect(page.getByTestId("file-preview").first()).toContainText("north,3");
  const zip = await page.request.get((await page.getByTestId("workspace-zip").getAttribute("href"))!);
  expect(zip.status()).toBe(200);
  expect(zip.headers()["content-type"]).toBe("application/zip");
  expect((await zip.body()).subarray(0, 2).toString()).toBe("PK");
  await shot(page, "agent-13-workspace");
});

test("a person gives the agent a catalog to go through in batches; the run header counts batches and items, the failed item is planned again", async ({ page, request }) => {
  await page.goto("/plans/new");
  const task = unique("Check every endpoint in the catalog");
  await page.getByTestId("task-input").fill(task);
  await page.getByTestId("task-files").setInputFiles({
    name: "catalog.txt",
    mimeType: "text/plain",
    buffer: Buffer.from("GET /users\nGET /orders\nPOST /cart\nGET /health\nGET /items\n"),
  });
  await page.getByTestId("task-batch-input").fill("catalog.txt");
  await page.getByTestId("task-batch-size").fill("2");
  await page.getByTestId("start-task").click();
  await page.waitForURL(/\/plans\/[0-9a-f-]{36}/);
  await expect(page.getByTestId("run-state")).toHaveText("waiting for approval", { timeout: 15_000 });
  // The first batch is the plan a person approves.
  await expect(page.getByTestId("run-batches")).toContainText("Batch 1 of about 3 · 0 of 5 items covered");
  await expect(page.locator("article.card")).toHaveCount(2);
  await shot(page, "agent-batches-1-first-batch");
  await page.getByTestId("approve").click();
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 40_000 });
  // Item 2 failed once and was planned again in the next batch.
  await expect(page.getByTestId("run-batches")).toContainText("5 of 5 items covered (5 done, 0 given up)");
  await expect(page.getByTestId("run-batches")).toContainText("83 % of attempts succeeded");
  await expect(page.getByTestId("run-answer")).toContainText("Covered 5 of 5 items in 3 batches: 5 done, 0 given up.");
  await shot(page, "agent-batches-2-done");
  const plan = page.url().split("/plans/")[1].split(/[?#]/)[0];
  const runs = await (await request.get(`/api/runs?plan=${plan}`)).json();
  expect(runs[0].batches.failed_attempts).toBe(1);
});

test("a guarded shell command waits on the board until a person approves it", async ({ page, request }) => {
  const res = await request.post("/api/runs", { data: { task: unique("[shell] Say hello"), mode: "complex", approval_required: false, policies: { run_shell: "ask" } } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await page.goto(`/plans/${run.plan_id}`);
  const guard = page.getByTestId("tool-guard-run_shell");
  await expect(guard).toBeVisible({ timeout: 15_000 });
  await expect(guard.getByTestId("tool-guard-shown")).toHaveText("echo hello from the sandbox > hello.txt");
  // Nothing ran yet: the workspace holds no hello.txt.
  const before = await (await request.get(`/api/runs/${run.id}/artifacts`)).json();
  expect(before.map((f: { path: string }) => f.path)).not.toContain("hello.txt");
  await shot(page, "agent-14-guard");
  await guard.getByTestId("tool-guard-approve").click();
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 20_000 });
  await expect(page.getByTestId("tool-guard-run_shell")).toHaveCount(0);
  const file = await request.get(`/api/runs/${run.id}/artifacts/hello.txt`);
  expect(await file.text()).toBe("hello from the sandbox\n");
  await page.getByTestId("run-activity").click();
  await expect(page.getByTestId("activity-row").filter({ hasText: "approved by" }).first()).toBeVisible();
  await expect(page.getByTestId("activity-row").filter({ hasText: "run_shell · ok" }).first()).toBeVisible();
});

test("an MCP server's question mid-call waits on the board and the person's answer goes back", async ({ page, request }) => {
  const res = await request.post("/api/runs", { data: { task: unique("[elicit] Sign up for the newsletter"), mode: "complex", approval_required: false } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await page.goto(`/plans/${run.plan_id}`);
  // The tool may write (it is not marked read-only): its call is approved first.
  const call = page.getByTestId("tool-guard-trigger-elicitation-request");
  await expect(call).toBeVisible({ timeout: 15_000 });
  await call.getByTestId("tool-guard-approve").click();
  // Mid-call, the server's form: its words, its fields with their defaults.
  const question = page.getByTestId("tool-guard-everything asks (in trigger-elicitation-request)");
  await expect(question).toBeVisible({ timeout: 15_000 });
  await expect(question.getByTestId("tool-guard-asker")).toContainText("The MCP server everything asks you");
  await expect(question.getByTestId("tool-guard-shown")).toContainText("Please provide inputs");
  const args = question.getByTestId("tool-guard-arguments");
  const shown = JSON.parse(await args.inputValue());
  expect(shown.answer.integer).toBe(42);
  expect(shown.fields.name).toContain("required");
  shown.answer.name = "Ada Lovelace";
  await args.fill(JSON.stringify(shown, null, 2));
  await shot(page, "agent-15-server-question");
  await question.getByTestId("tool-guard-edit").click();
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 30_000 });
  // The server got the person's answer, and the model read it back.
  const events = await (await request.get(`/api/runs/${run.id}/events`)).json();
  const called = events.find((e: { kind: string }) => e.kind === "tool_call");
  expect(called.entry.result).toContain("Name: Ada Lovelace");
});

test("the chart the agent's code drew shows under the answer and on the activity page", async ({ page, request }) => {
  const res = await request.post("/api/runs", { data: { task: unique("[chart] Draw the sales per region"), mode: "complex", approval_required: false } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await page.goto(`/plans/${run.plan_id}`);
  await expect(page.getByTestId("run-state")).toHaveText("done", { timeout: 30_000 });
  const loaded = (img: HTMLImageElement) => img.complete && img.naturalWidth;
  // Under the answer: the SVG it names first, then the PNG; both drawn.
  const answer = page.getByTestId("run-answer");
  await expect(answer).toContainText("The trend is drawn in trend.svg");
  const shown = answer.getByTestId("answer-image");
  await expect(shown).toHaveCount(2);
  await expect(shown.nth(0)).toHaveAttribute("data-path", "trend.svg");
  await expect(shown.nth(1)).toHaveAttribute("data-path", "chart.png");
  await expect.poll(() => shown.nth(0).evaluate(loaded)).toBeGreaterThan(0);
  await expect.poll(() => shown.nth(1).evaluate(loaded)).toBe(120);
  // The SVG's script never ran (an image runs none).
  expect(await page.evaluate(() => (window as unknown as { svgPwned?: boolean }).svgPwned)).toBeUndefined();
  await shot(page, "agent-chart-1-answer");
  // The activity page shows what the code wrote as thumbnails; a click
  // opens the chart at full size.
  await page.getByTestId("run-activity").click();
  await page.waitForURL(/\/activity$/);
  const thumbs = page.getByTestId("artifact-images").getByTestId("artifact-image");
  await expect(thumbs).toHaveCount(2);
  await expect(thumbs.nth(0)).toHaveAttribute("data-path", "chart.png");
  await expect.poll(() => thumbs.nth(0).evaluate(loaded)).toBe(120);
  await expect.poll(() => thumbs.nth(1).evaluate(loaded)).toBeGreaterThan(0);
  await expect(page.getByTestId("activity-row").filter({ hasText: "run_python · ok" }).first()).toBeVisible();
  await shot(page, "agent-chart-2-activity");
  const [full] = await Promise.all([page.waitForEvent("popup"), thumbs.nth(0).click()]);
  await full.waitForLoadState();
  expect(full.url()).toMatch(/\/api\/runs\/[0-9a-f-]{36}\/artifacts\/chart\.png$/);
  const image = await request.get(full.url());
  expect(image.headers()["content-type"]).toBe("image/png");
  expect(image.headers()["x-content-type-options"]).toBe("nosniff");
  await full.close();
});

test("a finished run is remembered; a person finds it on the Memory page, pins it and forgets it", async ({ page, request }) => {
  const task = unique("Measure the kettle temperature");
  const res = await request.post("/api/runs", { data: { task, mode: "simple", approval_required: false } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await expect.poll(async () => (await (await request.get(`/api/runs/${run.id}`)).json()).state, { timeout: 30_000 }).toBe("done");
  // Remembered just after the run's last state change.
  const search = `/api/memories?q=${encodeURIComponent(task)}`;
  await expect.poll(async () => JSON.stringify(await (await request.get(search)).json()), { timeout: 10_000 }).toContain("Outcome: done");
  await page.goto("/memories");
  await page.getByTestId("memory-search").fill(task);
  await page.getByTestId("memory-search").press("Enter");
  await page.waitForURL(/\/memories\?q=/);
  const row = page.getByTestId("memory-row").filter({ hasText: "Outcome: done" }).filter({ hasText: task });
  await expect(row).toHaveCount(1);
  await expect(row).toHaveAttribute("data-pinned", "false");
  await row.getByTestId("memory-pin").click();
  await page.waitForURL(/\/memories\?q=/);
  await expect(row).toHaveAttribute("data-pinned", "true");
  await expect(row.getByTestId("memory-pinned")).toBeVisible();
  await shot(page, "agent-16-memory");
  // A person corrects what the memory says.
  await row.getByTestId("memory-edit").click();
  await row.getByTestId("memory-edit-text").fill(`Outcome: done. Next time, weigh the kettle first (${task})`);
  await row.getByTestId("memory-edit-save").click();
  await page.waitForURL(/\/memories\?q=/);
  const edited = page.getByTestId("memory-row").filter({ hasText: "weigh the kettle first" });
  await expect(edited).toHaveCount(1);
  await edited.getByTestId("memory-forget").click();
  await page.waitForURL(/\/memories\?q=/);
  await expect(edited).toHaveCount(0);
  expect(JSON.stringify(await (await request.get(search)).json())).not.toContain("weigh the kettle");
});

test("a team writes a standing rule on the Memory page; it is pinned and the next run recalls it", async ({ page, request }) => {
  const rule = unique("Name the on-call engineer in every answer");
  await page.goto("/memories");
  await page.getByTestId("memory-rule").locator("summary").click();
  await page.getByTestId("memory-rule-text").fill(rule);
  await shot(page, "agent-16b-memory-rule");
  await page.getByTestId("memory-rule-save").click();
  await page.waitForURL(/\/memories$/);
  const row = page.getByTestId("memory-row").filter({ hasText: rule });
  await expect(row).toHaveCount(1);
  await expect(row).toHaveAttribute("data-pinned", "true");
  await expect(row).toContainText("rule");
  await expect(row).toContainText("every task");
  // A task that shares no word with the rule still recalls it.
  const res = await request.post("/api/runs", { data: { task: unique("Tidy the kitchen shelves"), mode: "simple", approval_required: false } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await expect.poll(async () => (await (await request.get(`/api/runs/${run.id}`)).json()).state, { timeout: 30_000 }).toBe("done");
  const events = await (await request.get(`/api/runs/${run.id}/events`)).json();
  const recalled = events.filter((e: { kind: string }) => e.kind === "recalled").map((e: { entry: unknown }) => JSON.stringify(e.entry));
  expect(recalled.join("\n")).toContain(rule);
  // An empty rule is refused with a reason, in the person's words.
  await page.getByTestId("memory-rule").locator("summary").click();
  await page.getByTestId("memory-rule-text").fill("   ");
  await page.getByTestId("memory-rule-save").click();
  await expect(page.locator("body")).toContainText("1 to 2000 characters");
  // Forget it, so later stories' runs do not read it.
  await page.goto("/memories");
  await page.getByTestId("memory-row").filter({ hasText: rule }).getByTestId("memory-forget").click();
  await page.waitForURL(/\/memories$/);
  await expect(page.getByTestId("memory-row").filter({ hasText: rule })).toHaveCount(0);
});

test("an admin adds a webhook endpoint on the settings page and removes it", async ({ page }) => {
  await page.goto("/");
  await page.getByTestId("nav-settings").click();
  await page.waitForURL(/\/settings$/);
  const host = `${unique("hooks").toLowerCase().replace(/[^a-z0-9]+/g, "-")}.example.com`;
  await page.getByTestId("endpoint-url-input").fill(`https://${host}/services/secret-path`);
  await page.locator('input[name="secret"]').fill("whsec-e2e");
  await page.locator('select[name="format"]').selectOption("slack");
  await page.getByTestId("endpoint-add-button").click();
  await page.waitForURL(/\/settings$/);
  const row = page.getByTestId("endpoint-row").filter({ hasText: host });
  // Scheme and host only: the path of a Slack URL is a secret.
  await expect(row.getByTestId("endpoint-url")).toHaveText(`https://${host}/…`);
  await expect(row).toContainText("Slack");
  await expect(page.locator("body")).not.toContainText("secret-path");
  await shot(page, "settings-webhooks");
  await row.getByTestId("endpoint-remove").click();
  await page.waitForURL(/\/settings$/);
  await expect(page.getByTestId("endpoint-row").filter({ hasText: host })).toHaveCount(0);
});

test("an admin connects a real MCP server on the Tools page, tests it and removes it", async ({ page }) => {
  // A third-party MCP server from npm (installed with these tests), started
  // by planboard over stdio.
  const everything = path.resolve(
    __dirname,
    "../node_modules/@modelcontextprotocol/server-everything/dist/index.js",
  );
  const name = unique("everything").toLowerCase().replace(/[^a-z0-9]+/g, "-").slice(0, 40);
  await page.goto("/");
  await page.getByTestId("nav-tools").click();
  await page.waitForURL(/\/tools$/);
  await expect(page.getByTestId("builtin-tool").filter({ hasText: "write_file" })).toHaveCount(1);
  await page.getByTestId("server-name-input").fill(name);
  await page.getByTestId("server-command-input").fill("node");
  await page.getByTestId("server-args-input").fill(`${everything}\nstdio`);
  await page.locator('form[data-testid="server-add"] textarea[name="env"]').fill("PROBE_SECRET=env-secret-e2e");
  await page.getByTestId("server-add-button").click();
  await page.waitForURL(/\/tools$/);
  const row = page.locator(`[data-testid="server-row"][data-name="${name}"]`);
  await expect(row.getByTestId("server-state")).toHaveText("connected");
  await expect(row.getByTestId("server-tools")).toContainText("echo");
  await expect(row).toContainText("env: PROBE_SECRET");
  await expect(page.locator("body")).not.toContainText("env-secret-e2e");
  await shot(page, "tools-page");
  // The task box offers its tools now, beside those of the server the
  // operator's file names (the same program: its echo too).
  await page.goto("/plans/new");
  const echo = page.getByTestId("task-tool-echo");
  await expect(echo).toHaveCount(2);
  await expect(echo.nth(0)).toBeChecked();
  await expect(echo.nth(1)).toBeChecked();
  await page.goto("/tools");
  await row.getByTestId("server-test").click();
  await page.waitForURL(/\/tools$/);
  await expect(row.getByTestId("server-state")).toHaveText("connected");
  await row.getByTestId("server-remove").click();
  await page.waitForURL(/\/tools$/);
  await expect(page.locator(`[data-testid="server-row"][data-name="${name}"]`)).toHaveCount(0);
});

test("a person reviews a finished run from the queue, sees it in History, and a similar task recalls the review", async ({ page, request }) => {
  const tag = unique("quarterly").split(" ")[1];
  const task = `Publish the quarterly ledger ${tag}`;
  const res = await request.post("/api/runs", { data: { task, mode: "simple", approval_required: false } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await expect.poll(async () => (await (await request.get(`/api/runs/${run.id}`)).json()).state, { timeout: 30_000 }).toBe("done");
  // The queue lists it with what was asked, and the top bar counts it.
  await page.goto("/reviews");
  await expect(page.getByTestId("review-count")).not.toHaveText("0");
  const queued = page.getByTestId("review-queue-row").filter({ hasText: task });
  await expect(queued.getByTestId("asked")).toHaveText(task);
  await queued.getByTestId("review-link").click();
  await page.waitForURL(new RegExp(`/plans/${run.plan_id}`));
  // A verdict that asks for change needs a note: the refusal says so.
  await page.getByTestId("verdict-needs_changes").check();
  await page.getByTestId("review-save").click();
  await expect(page.locator("body")).toContainText("needs a note");
  await page.goBack();
  await page.getByTestId("verdict-needs_changes").check();
  await page.getByTestId("review-note-input").fill(`always reconcile the ledger ${tag} before publishing`);
  await page.getByTestId("review-form").getByText("Notes on single subtasks").click();
  await page.getByTestId("review-subtask-1").fill("name the source files");
  await page.getByTestId("review-save").click();
  const review = page.getByTestId("review");
  await expect(review.getByTestId("review-note")).toHaveText(`always reconcile the ledger ${tag} before publishing`);
  await expect(review.getByTestId("verdict")).toHaveAttribute("data-verdict", "needs_changes");
  await expect(review).toContainText("name the source files");
  await shot(page, "review-on-board");
  // History: what was asked, the verdict, and the filter by verdict.
  await page.goto("/history?verdict=needs_changes");
  const row = page.getByTestId("history-row").filter({ hasText: task });
  await expect(row.getByTestId("asked")).toHaveText(task);
  await expect(row.getByTestId("verdict")).toHaveAttribute("data-verdict", "needs_changes");
  await shot(page, "history-reviewed");
  await page.goto("/history?verdict=good");
  await expect(page.getByTestId("history-row").filter({ hasText: task })).toHaveCount(0);
  // A similar task: its run recalls the review before it plans.
  const again = await request.post("/api/runs", { data: { task: `Publish the quarterly ledger ${tag} again`, mode: "simple", approval_required: false } });
  const second = await again.json();
  await expect.poll(async () => (await (await request.get(`/api/runs/${second.id}`)).json()).state, { timeout: 30_000 }).toBe("done");
  await page.goto(`/plans/${second.plan_id}/activity`);
  await expect(page.getByTestId("activity-row").filter({ hasText: "memories of earlier runs" })).toContainText(`always reconcile the ledger ${tag}`);
});

test("a person runs a finished plan again from a subtask: the new run keeps the earlier results and both plans link each other", async ({ page, request }) => {
  const task = unique("Tally the votes per district");
  const res = await request.post("/api/runs", { data: { task, mode: "simple", approval_required: false } });
  const run = await res.json();
  await expect.poll(async () => (await (await request.get(`/api/runs/${run.id}`)).json()).state, { timeout: 30_000 }).toBe("done");
  const before = (await (await request.get(`/api/plans/${run.plan_id}`)).json()).plan;
  await page.goto(`/plans/${run.plan_id}`);
  await page.getByTestId("again-from").selectOption("2");
  await page.getByTestId("again-submit").click();
  await page.waitForURL((url) => url.pathname.startsWith("/plans/") && !url.pathname.includes(run.plan_id));
  await expect(page.getByTestId("again-of")).toContainText("Run again from #2");
  const fresh = page.url().split("/plans/")[1].split(/[?#]/)[0];
  await expect.poll(async () => (await (await request.get(`/api/plans/${fresh}`)).json()).plan.state, { timeout: 30_000 }).toBe("done");
  const after = (await (await request.get(`/api/plans/${fresh}`)).json()).plan;
  expect(after.subtasks[0].outcome).toBe(before.subtasks[0].outcome);
  await page.reload();
  await shot(page, "run-again-new");
  await page.getByTestId("again-of").getByRole("link").click();
  await expect(page.getByTestId("again-link")).toHaveAttribute("href", `/plans/${fresh}`);
});

test("a person saves a finished plan as a template, starts a new task from it and deletes it", async ({ page, request }) => {
  const task = unique("Migrate the orders database");
  const res = await request.post("/api/runs", { data: { task, mode: "complex", approval_required: false } });
  const run = await res.json();
  await expect.poll(async () => (await (await request.get(`/api/runs/${run.id}`)).json()).state, { timeout: 30_000 }).toBe("done");
  const name = unique("Database migration");
  await page.goto(`/plans/${run.plan_id}`);
  await page.getByTestId("save-template").locator("summary").click();
  await page.getByTestId("template-name-input").fill(name);
  await page.getByTestId("template-save").click();
  await page.waitForURL(/\/templates$/);
  const card = page.getByTestId("template").filter({ hasText: name });
  await expect(card.getByTestId("template-name")).toHaveText(name);
  await expect(card).toContainText(task);
  await shot(page, "templates-page");
  // Start a task from it: the task box has it chosen; the run takes its mode.
  await card.getByTestId("template-use").click();
  await page.waitForURL(/\/plans\/new\?template=/);
  const id = new URL(page.url()).searchParams.get("template")!;
  await expect(page.getByTestId("task-template")).toHaveValue(id);
  await page.getByTestId("task-input").fill(unique("Migrate the invoices database"));
  await page.getByTestId("start-task").click();
  await page.waitForURL(/\/plans\/[0-9a-f-]{36}/);
  await expect(page.getByTestId("run-why")).toContainText(`started from the template «${name}»`, { timeout: 15_000 });
  await expect(page.getByTestId("run-mode")).toContainText("person");
  // Deleted: gone from the page.
  await page.goto("/templates");
  await page.getByTestId("template").filter({ hasText: name }).getByTestId("template-delete").click();
  await page.waitForURL(/\/templates$/);
  await expect(page.getByTestId("template").filter({ hasText: name })).toHaveCount(0);
});

test("the settings page shows what planboard stores, how much, and for how long, in English and Chinese", async ({ page, request }) => {
  // A run with an uploaded file: its workspace is on disk.
  const csv = "region,amount\n" + "north,3\n".repeat(500);
  const res = await request.post("/api/runs", {
    multipart: {
      run: JSON.stringify({ task: unique("Total the sales per region") }),
      files: { name: "sales.csv", mimeType: "text/csv", buffer: Buffer.from(csv) },
    },
  });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  const storage = await (await request.get("/api/storage")).json();
  expect(storage.workspaces.count).toBeGreaterThan(0);
  expect(storage.workspaces.bytes).toBeGreaterThanOrEqual(csv.length);
  expect(storage.retention).toMatchObject({ workspace_days: 7, run_log_hours: 720, webhook_days: 30 });

  await page.goto("/");
  await page.getByTestId("nav-settings").click();
  await page.waitForURL(/\/settings$/);
  const table = page.getByTestId("storage");
  await expect(table.getByTestId("storage-plans").getByTestId("storage-amount")).toContainText(`${storage.plans} plans`);
  await expect(table.getByTestId("storage-runs").getByTestId("storage-amount")).toHaveText(`${storage.runs}`);
  await expect(table.getByTestId("storage-workspaces").getByTestId("storage-amount")).toContainText(
    `${storage.workspaces.count} folders`,
  );
  await expect(table.getByTestId("storage-workspaces").getByTestId("storage-kept")).toHaveText(
    "7 days after a run ended; at most 1.0 GiB per run",
  );
  await expect(table.getByTestId("storage-run-log").getByTestId("storage-kept")).toHaveText("720 hours after a run ended");
  await expect(table.getByTestId("storage-webhooks").getByTestId("storage-kept")).toHaveText("30 days once over");
  await expect(table.getByTestId("storage-database").getByTestId("storage-amount")).toContainText(/\d/);
  await shot(page, "settings-storage");

  await page.getByTestId("lang-switch").click();
  await expect(page.locator("html")).toHaveAttribute("lang", "zh");
  await expect(page.locator("h2").filter({ hasText: "存储" })).toBeVisible();
  await expect(table.getByTestId("storage-workspaces").getByTestId("storage-kept")).toHaveText(
    "运行结束后 7 天；每个运行最多 1.0 GiB",
  );
  await expect(table.getByTestId("storage-plans").getByTestId("storage-amount")).toContainText("个计划");
  await shot(page, "settings-storage-zh");
  await request.post(`/api/runs/${run.id}/cancel`);
});

test("a person keeps a finished run's files from the retention on its board, and lets them go", async ({ page, request }) => {
  const res = await request.post("/api/runs", { data: { task: unique("Say hello and keep it"), mode: "simple", approval_required: false } });
  expect(res.status(), await res.text()).toBe(201);
  const run = await res.json();
  await expect
    .poll(async () => (await (await request.get(`/api/runs/${run.id}`)).json()).state, { timeout: 30_000 })
    .toBe("done");
  await openBoard(page, run.plan_id);
  await expect(page.getByTestId("run-state")).toHaveText("done");
  await page.getByTestId("run-keep").click();
  await expect(page.getByTestId("run-kept")).toContainText("its files and its log stay for good");
  expect((await (await request.get(`/api/runs/${run.id}`)).json()).kept).toBe(true);
  await shot(page, "run-kept");
  await page.getByTestId("run-unkeep").click();
  await expect(page.getByTestId("run-keep")).toBeVisible();
  expect((await (await request.get(`/api/runs/${run.id}`)).json()).kept).toBeUndefined();
});
