// A benchmark, not a test: how long a state change sent by an agent takes
// to reach the board in Chromium. Run it against a release build
// (`scripts/build.sh --release`), started as bench.config.ts says, then in
// end2end/: `npx playwright test -c bench.config.ts latency`.
import { test } from "@playwright/test";
import { createPlan, openBoard, setState, unique } from "../tests/helpers";

test("from a state change to the board showing it: median of 20", async ({ page, request }) => {
  const id = await createPlan(request, unique("Latency"), [{ name: "ping" }]);
  await openBoard(page, id);
  const times: number[] = [];
  for (let i = 0; i < 20; i++) {
    const to = i % 2 === 0 ? "in_progress" : "todo";
    const column = to === "in_progress" ? "column-in_progress" : "column-ready";
    const t0 = Date.now();
    await setState(request, id, 1, to);
    await page.getByTestId(column).getByTestId("card-1").waitFor();
    times.push(Date.now() - t0);
  }
  times.sort((a, b) => a - b);
  const median = (times[9] + times[10]) / 2;
  console.log(`state change → board update: median ${median} ms, min ${times[0]} ms, max ${times[19]} ms (20 changes)`);
});

