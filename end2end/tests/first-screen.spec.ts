import { expect, test } from "@playwright/test";
import { shot, unique } from "./helpers";

// The first screen (`/`) leads with the task box; its advanced settings
// (every setting of the API's StartRun) fold away until opened.

test("a newcomer starts a task from the first screen with advanced settings", async ({ page, request }) => {
  await page.goto("/");
  // The task box first, then what needs the person, then the plans.
  const top = async (locator: ReturnType<typeof page.getByTestId>) => (await locator.boundingBox())!.y;
  const box = page.getByTestId("task-box");
  await expect(box).toBeVisible();
  expect(await top(box)).toBeLessThan(await top(page.getByTestId("home-needs")));
  expect(await top(page.getByTestId("home-needs"))).toBeLessThan(await top(page.getByRole("heading", { name: "Plans" })));
  // What the agent can use, in one line.
  await expect(page.getByTestId("agent-model")).toContainText("fake");
  await expect(page.getByTestId("agent-model-state")).toHaveText("answers");
  await expect(page.getByTestId("agent-tools")).toHaveText(/^Tools: \d+ on$/);
  await expect(page.getByTestId("agent-files")).toContainText("Files: up to 50");
  // The advanced settings are folded.
  await expect(page.getByTestId("task-tokens")).toBeHidden();
  await shot(page, "first-screen");

  const task = unique("Check each endpoint of the catalog");
  await page.getByTestId("task-input").fill(task);
  await page.getByTestId("task-files").setInputFiles({
    name: "endpoints.txt",
    mimeType: "text/plain",
    buffer: Buffer.from("GET /users\nGET /orders\nGET /health\n"),
  });
  await page.getByTestId("task-advanced-toggle").click();
  await expect(page.getByTestId("task-tokens")).toBeVisible();
  await page.getByTestId("task-tokens").fill("40000");
  await page.getByTestId("task-calls").fill("60");
  await page.getByTestId("task-minutes").fill("12");
  // A number is checked as it is typed: 11 attempts is over the limit.
  await page.getByTestId("task-attempts").fill("11");
  expect(await page.getByTestId("task-attempts").evaluate((el) => (el as HTMLInputElement).validity.valid)).toBe(false);
  await page.getByTestId("task-attempts").fill("2");
  expect(await page.getByTestId("task-attempts").evaluate((el) => (el as HTMLInputElement).validity.valid)).toBe(true);
  await page.getByTestId("task-retry-delay").fill("0.5");
  await page.getByTestId("task-adapt-every-step").check();
  await page.getByTestId("task-no-memory").check();
  await page.getByTestId("task-ask-write_file").check();
  // The folder field says what the operator allows (nothing, here).
  await expect(page.getByTestId("task-source")).toBeDisabled();
  await expect(page.getByTestId("task-roots-hint")).toContainText("PLANBOARD_WORKSPACE_ROOTS");
  // The batch file is checked against the files chosen as it is typed.
  await page.getByTestId("task-batch-input").fill("endpoints.csv");
  await expect(page.getByTestId("task-batch-check")).toHaveText("“endpoints.csv” is not one of the files chosen: endpoints.txt.");
  expect(await page.getByTestId("task-batch-input").evaluate((el) => (el as HTMLInputElement).validity.valid)).toBe(false);
  await page.getByTestId("task-batch-input").fill("endpoints.txt");
  await expect(page.getByTestId("task-batch-check")).toHaveText("");
  await page.getByTestId("task-batch-size").fill("2");
  await shot(page, "first-screen-advanced");
  await page.getByTestId("start-task").click();

  await page.waitForURL(/\/plans\/[0-9a-f-]{36}/);
  await expect(page.getByTestId("run-state")).toHaveText("waiting for approval", { timeout: 15_000 });
  await expect(page.getByTestId("run-spent")).toContainText("/ 40000 tokens");
  await expect(page.getByTestId("run-time")).toContainText(" / 12:00");
  await expect(page.getByTestId("run-batches")).toContainText("0 of 3 items covered");
  const plan = page.url().split("/plans/")[1].split(/[?#]/)[0];
  const runs = await (await request.get(`/api/runs?plan=${plan}`)).json();
  expect(runs[0].config).toMatchObject({
    task,
    max_attempts: 2,
    retry_delay_ms: 500,
    memory: false,
    adapt_every_step: true,
    policies: { write_file: "ask" },
    batches: { input: "endpoints.txt", size: 2 },
    budget: { max_tokens: 40000, max_llm_calls: 60, max_wall_secs: 720 },
  });

  // Back on the first screen, the plan waiting for approval needs the person.
  await page.goto("/");
  await expect(page.getByTestId("home-need").first()).toBeVisible();
  await expect(page.getByTestId("home-needs-all")).toHaveText(/^All \d+ in Needs you →$/);
  // Its links are named for the action; the plan's own link is in the list below.
  await expect(page.getByTestId("home-need-link").first()).toHaveText(/^(Review and approve|Answer|Allow or deny|Look and resume)$/);
  // In Chinese too.
  await page.getByTestId("lang-switch").click();
  await expect(page.getByRole("heading", { name: "把任务交给 planboard 的智能体" })).toBeVisible();
  await expect(page.getByTestId("task-advanced-toggle")).toContainText("高级设置");
  await expect(page.getByRole("heading", { name: "待处理" })).toBeVisible();
  await shot(page, "first-screen-zh");
  await page.getByTestId("lang-switch").click();
  await expect(page.locator("html")).toHaveAttribute("lang", "en");
});

test("a refused task comes back to the first screen with every setting as typed", async ({ page }) => {
  await page.goto("/");
  const task = unique("Refused <b>as typed</b>");
  await page.getByTestId("task-input").fill(task);
  await page.getByTestId("task-advanced-toggle").click();
  await page.getByTestId("task-calls").fill("77");
  await page.getByTestId("task-no-memory").check();
  await page.getByTestId("task-tool-fetch_url").uncheck();
  // A mode no planner has: only the server can refuse it.
  await page.getByTestId("task-mode").evaluate((el) => {
    const option = document.createElement("option");
    option.value = "sideways";
    el.appendChild(option);
    (el as HTMLSelectElement).value = "sideways";
  });
  await page.getByTestId("start-task").click();
  await page.waitForURL((url) => url.pathname === "/" && url.search.includes("task_error"));
  await expect(page.getByTestId("task-error")).toContainText("sideways");
  await expect(page.getByTestId("task-input")).toHaveValue(task);
  await expect(page.getByTestId("task-calls")).toBeVisible();
  await expect(page.getByTestId("task-calls")).toHaveValue("77");
  await expect(page.getByTestId("task-no-memory")).toBeChecked();
  await expect(page.getByTestId("task-tool-fetch_url")).not.toBeChecked();
  await expect(page.getByTestId("task-tool-read_file")).toBeChecked();
});
