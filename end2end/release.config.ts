import base from "./playwright.config";
import { defineConfig } from "@playwright/test";

// The stories that show the board comes alive, run against the release
// build as scripts/run serves it (scripts/test starts it on a free port
// with a fresh database): every page's files, the plan page's tabs, the
// task box and approval.
export default defineConfig({
  ...base,
  grep: new RegExp(
    [
      "every page asks only for files the build made",
      "a file the build did not make is a plain 404",
      "the view tabs switch in place",
      "a tab clicked before the board is live",
      "the DAG view lays out the graph",
      "approval gates the board",
      "a person gives the agent a task, approves its plan and reads the answer",
      "a newcomer starts a task from the first screen",
    ].join("|"),
  ),
});
