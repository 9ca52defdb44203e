import { APIRequestContext, expect, Page } from "@playwright/test";

export type Sub = { name: string; dependencies?: number[]; tool?: string };

/** Creates a plan through the agents' REST API; returns its id. */
export async function createPlan(
  request: APIRequestContext,
  title: string,
  subtasks: Sub[],
  extra: Record<string, unknown> = {},
): Promise<string> {
  const res = await request.post("/api/plans", { data: { title, subtasks, ...extra } });
  expect(res.status(), await res.text()).toBe(201);
  return (await res.json()).plan.id;
}

/** Sets a subtask's state the way an agent would. */
export async function setState(request: APIRequestContext, id: string, subtask: number, state: string) {
  const res = await request.post(`/api/plans/${id}/subtasks/${subtask}/state`, { data: { state } });
  expect(res.ok(), await res.text()).toBeTruthy();
}

/** Opens a board and waits until the wasm has hydrated and the stream is live. */
export async function openBoard(page: Page, id: string, view = "kanban") {
  await page.goto(`/plans/${id}?view=${view}`);
  await expect(page.getByTestId("connection")).toHaveText("live");
}

export async function shot(page: Page, name: string) {
  await page.screenshot({ path: `screenshots/${name}.png`, fullPage: true });
}

/** A unique title per run, so tests never see each other's plans. */
export function unique(title: string): string {
  return `${title} ${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
}
