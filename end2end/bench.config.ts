import base from "./playwright.config";
import { defineConfig } from "@playwright/test";

// The board benchmarks (bench/): the same browser and server settings as
// the tests, run only when asked (`npx playwright test -c bench.config.ts`).
export default defineConfig({ ...base, testDir: "./bench", globalSetup: undefined });
