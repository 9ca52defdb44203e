import base from "./playwright.config";
import { defineConfig } from "@playwright/test";

// The board benchmarks (bench/): the same browser and server settings as
// the tests, run only when asked (`npx playwright test -c bench.config.ts`).
// They measure the release build (`scripts/build.sh --release`), started
// the way `end_to_end()` in scripts/test starts the debug one, e.g.
//   DATABASE_URL=sqlite:///tmp/bench/b.db LEPTOS_SITE_ADDR=127.0.0.1:3000 \
//     LEPTOS_SITE_ROOT=$PWD/target/site PLANBOARD_INSTANCE=bench \
//     target/release/planboard &
// with PLANBOARD_URL / PLANBOARD_INSTANCE set to match here: global-setup.ts
// waits for that server, as for the tests.
export default defineConfig({ ...base, testDir: "./bench" });
