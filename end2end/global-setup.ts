// `cargo leptos end-to-end` starts the server and the tests together; wait
// until it answers so the first test does not race the server's start-up.
// `scripts/test` starts it on a free port with a name (PLANBOARD_INSTANCE)
// that /healthz echoes: a server that answers without it is someone else's
// (a leftover on the port), and the run stops instead of testing it.
export default async function globalSetup(): Promise<void> {
  const base = process.env.PLANBOARD_URL ?? "http://127.0.0.1:3000";
  const instance = process.env.PLANBOARD_INSTANCE;
  const deadline = Date.now() + 120_000;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${base}/healthz`);
      const name = res.headers.get("x-planboard-instance");
      if (res.ok && (instance === undefined || name === instance)) return;
      last = res.ok ? `a server that is not this run's (instance '${name}', expected '${instance}')` : `HTTP ${res.status}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`planboard did not answer at ${base}/healthz within 120 s: ${last}`);
}
