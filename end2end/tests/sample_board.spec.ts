import { expect, test } from "@playwright/test";
import { mkdirSync } from "node:fs";

const shots = "screenshots";
mkdirSync(shots, { recursive: true });

test("the sample plan is rendered on the server before any script runs", async ({ browser }) => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  await page.goto("/");
  await expect(page.getByTestId("plan-title")).toHaveText("Buy a mechanical keyboard on JD.com");
  await expect(page.getByTestId("subtask-6")).toHaveAttribute("data-state", "todo");
  await expect(page.getByTestId("subtask-6")).toHaveClass(/ready/);
  await expect(page.getByTestId("progress-text")).toHaveText("33% done or skipped");
  await context.close();
});

test("after hydration the buttons walk the plan with the engine running in the browser", async ({ page }) => {
  await page.goto("/");
  await expect(page.locator("section.board")).toHaveAttribute("data-hydrated", "true");
  await page.screenshot({ path: `${shots}/sample-board.png`, fullPage: true });

  await page.getByTestId("start-next").click();
  await expect(page.getByTestId("subtask-6")).toHaveAttribute("data-state", "in_progress");
  await expect(page.getByTestId("status")).toHaveText("Version 7: subtask_state_changed");

  // Only one subtask is ready, and it depends on nothing else running: a
  // second start is refused with the engine's own words.
  await page.getByTestId("start-next").click();
  await expect(page.getByTestId("status")).toContainText("nothing can start");

  await page.getByTestId("complete-current").click();
  await expect(page.getByTestId("subtask-6")).toHaveAttribute("data-state", "done");
  await expect(page.getByTestId("progress-text")).toHaveText("50% done or skipped");
  await expect(page.getByTestId("subtask-3")).toHaveClass(/ready/);

  await page.getByTestId("complete-current").click();
  await expect(page.getByTestId("status")).toHaveText("no subtask is in progress; start one first");
  await page.screenshot({ path: `${shots}/sample-board-after-walk.png`, fullPage: true });

  await page.getByTestId("reset").click();
  await expect(page.getByTestId("subtask-6")).toHaveAttribute("data-state", "todo");
});

test("the health check answers", async ({ request }) => {
  const res = await request.get("/healthz");
  expect(res.ok()).toBeTruthy();
  expect(await res.text()).toBe("ok");
});
