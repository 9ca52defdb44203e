// `cargo leptos end-to-end` starts the server and the tests together; wait
// until it answers so the first test does not race the server's start-up.
export default async function globalSetup(): Promise<void> {
  const base = process.env.PLANBOARD_URL ?? "http://127.0.0.1:3000";
  const deadline = Date.now() + 120_000;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${base}/healthz`);
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`planboard did not answer at ${base}/healthz within 120 s: ${last}`);
}
