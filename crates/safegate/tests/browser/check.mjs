// The browser test of `safegate serve` (run by crates/safegate/tests/browser.rs): headless
// Chromium driven by playwright-core loads the page, moves the sliders and checks that the
// chart shows what the model says, how long each redraw takes, the page's weight, labels,
// and the layout on a narrow screen. Prints one JSON line of measurements; exits 1 with
// the reasons on a failure.
//
// Environment: SAFEGATE_URL (the server), SAFEGATE_NODE_MODULES (holding playwright-core),
// SAFEGATE_CHROMIUM (the browser), SAFEGATE_ARTIFACTS (screenshots go there).
import { createRequire } from "node:module";
import path from "node:path";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const url = env("SAFEGATE_URL");
const require = createRequire(path.join(env("SAFEGATE_NODE_MODULES"), "noop.js"));
const { chromium } = require("playwright-core");
const artifacts = env("SAFEGATE_ARTIFACTS");

// Budgets: issue 18's.
const MAX_PAGE_BYTES = 150 * 1000;
const MAX_REDRAW_MS = 100;
const CAPACITY = 200;

const failures = [];
const check = (ok, what) => {
  if (!ok) failures.push(what);
};

// The form controls of a page without a <label>.
const unlabelledControls = (page) =>
  page.evaluate(() =>
    [...document.querySelectorAll("input, select, textarea")]
      .filter((el) => !el.labels || el.labels.length === 0)
      .map((el) => el.id || el.name || el.outerHTML.slice(0, 60)),
  );

const browser = await chromium.launch({
  executablePath: env("SAFEGATE_CHROMIUM"),
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const out = {};
try {
  // Wide: 1280×800.
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const weights = {};
  page.on("response", async (r) => {
    const type = r.request().resourceType();
    if (["document", "script", "stylesheet"].includes(type)) {
      const body = await r.body().catch(() => Buffer.alloc(0));
      weights[new URL(r.url()).pathname] = body.length;
    }
  });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(() => window.safegate && window.safegate.seq >= 1, null, { timeout: 10000 });
  const pageBytes = Object.values(weights).reduce((a, b) => a + b, 0);
  out.page_weight_bytes = pageBytes;
  out.page_files = weights;
  check(pageBytes <= MAX_PAGE_BYTES, `page weight ${pageBytes} B over ${MAX_PAGE_BYTES} B`);
  check(Object.keys(weights).length >= 5, `page files loaded: ${Object.keys(weights).join(", ")}`);

  // Every form control has a <label>.
  const unlabelled = await unlabelledControls(page);
  check(unlabelled.length === 0, `controls without a label: ${unlabelled.join(", ")}`);

  // Moves a control to `value` and waits for the chart drawn from a run started after the
  // move; returns the in-page time from the input event to the drawn chart [ms].
  const move = async (id, value) => {
    await page.waitForFunction(() => !window.safegate.inFlight && window.safegate.pendingSince === null);
    const t0 = await page.evaluate(
      ([id, value]) => {
        const el = document.getElementById(id);
        const t = performance.now();
        el.value = String(value);
        el.dispatchEvent(new Event("input", { bubbles: true }));
        return t;
      },
      [id, value],
    );
    await page.waitForFunction(
      (t0) => window.safegate.last && window.safegate.last.inputAt !== null && window.safegate.last.inputAt >= t0,
      t0,
      { timeout: 10000 },
    );
    return page.evaluate(() => window.safegate.last.ms);
  };
  // What the chart shows: the backlog series' max and last value, and the θ·cap line.
  const chart = () =>
    page.evaluate(() => {
      const d = window.safegate.plot.data;
      const q = d[1];
      return { max: Math.max(...q), last: q[q.length - 1], line: d[3][0], points: q.length };
    });

  // One redraw time per move. A move over the budget is measured again (back to the value
  // before, then to it once more), at most twice: on a 2-core CI machine whose other tests
  // hold the cores, a single move once took 398 ms against a 14.5 ms median. Every slow
  // first try is reported in `redraw_ms.retried`, so a page that is slow every time still
  // fails.
  const redraws = [];
  const retried = [];
  const timed = async (id, value, before) => {
    let ms = await move(id, value);
    const tries = [ms];
    while (ms > MAX_REDRAW_MS && tries.length < 3) {
      await move(id, before);
      const again = await move(id, value);
      tries.push(again);
      ms = Math.min(ms, again);
    }
    if (tries.length > 1) retried.push({ id, value, ms: tries.map((x) => Math.round(x * 10) / 10) });
    redraws.push(ms);
  };
  await page.selectOption("#policy", "gate");
  await timed("sensitivity", 0, 0.5);
  await timed("traffic", 55, 50);
  const at55 = await chart();
  for (const [v, before] of [[60, 55], [65, 60], [70, 65], [75, 70], [80, 75]]) await timed("traffic", v, before);
  const at80off = await chart();
  await page.screenshot({ path: path.join(artifacts, "wide-80-gate-off.png") });
  for (const [v, before] of [[0.25, 0], [0.5, 0.25], [0.75, 0.5], [1, 0.75]]) await timed("sensitivity", v, before);
  const at80on = await chart();
  await page.screenshot({ path: path.join(artifacts, "wide-80-gate-on.png") });
  out.backlog = { at55_gate_off: at55, at80_gate_off: at80off, at80_gate_on: at80on };

  // The model: λ = 80 above the 75 req/s ceiling with the gate off pins the backlog at
  // the capacity; the gate at sensitivity 1 keeps it below (the seed's 143.8–193.9 band).
  check(Math.abs(at80off.max - CAPACITY) < 1e-6, `λ 80, gate off: backlog max ${at80off.max}, expected the cap ${CAPACITY}`);
  check(Math.abs(at80off.last - CAPACITY) < 1e-6, `λ 80, gate off: backlog at the end ${at80off.last}, expected pinned at ${CAPACITY}`);
  check(at80on.max < CAPACITY - 1, `λ 80, gate on: backlog max ${at80on.max}, expected below the cap ${CAPACITY}`);
  check(at80on.max > 0.7 * CAPACITY, `λ 80, gate on: backlog max ${at80on.max}, expected above θ·cap (the band reaches 193.9)`);
  check(Math.abs(at80on.line - 0.7 * CAPACITY) < 1e-9, `θ·cap line at ${at80on.line}, expected 140`);
  // At λ = 55 the cycle's low health still fills the queue, but it drains in between.
  check(at55.last < CAPACITY - 1, `λ 55, gate off: backlog at the end ${at55.last}, expected it to drain below the cap between dips`);

  const sorted = [...redraws].sort((a, b) => a - b);
  out.redraw_ms = {
    n: redraws.length,
    median: sorted[Math.floor(sorted.length / 2)],
    max: sorted[sorted.length - 1],
    all: redraws.map((x) => Math.round(x * 10) / 10),
    retried,
  };
  check(sorted[sorted.length - 1] <= MAX_REDRAW_MS, `slider to redrawn chart took ${sorted[sorted.length - 1].toFixed(1)} ms, over ${MAX_REDRAW_MS} ms`);
  check(errors.length === 0, `page errors: ${errors.join("; ")}`);
  const status = await page.textContent("#status");
  check(!(await page.$("#status.error")), `the page shows an error: ${status}`);
  await page.close();

  // Narrow: 390×844, no horizontal overflow.
  const narrow = await browser.newPage({ viewport: { width: 390, height: 844 } });
  await narrow.goto(url, { waitUntil: "load" });
  await narrow.waitForFunction(() => window.safegate && window.safegate.seq >= 1, null, { timeout: 10000 });
  const widths = await narrow.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    inner: window.innerWidth,
    chart: document.querySelector("#chart canvas").getBoundingClientRect().right,
  }));
  out.narrow = widths;
  check(widths.scroll <= widths.inner, `narrow screen: page ${widths.scroll} px wide in a ${widths.inner} px viewport`);
  check(widths.chart <= widths.inner, `narrow screen: chart ends at ${widths.chart} px, viewport ${widths.inner} px`);
  await narrow.screenshot({ path: path.join(artifacts, "narrow-390.png"), fullPage: true });
  await narrow.close();

  // The live view: labels, and a short live run (its own redis-server) streamed to the end.
  const live = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await live.goto(url.replace(/\/?$/, "/live"), { waitUntil: "load" });
  const liveUnlabelled = await unlabelledControls(live);
  check(liveUnlabelled.length === 0, `live view: controls without a label: ${liveUnlabelled.join(", ")}`);
  await live.fill("#duration", "10");
  await live.fill("#speed", "5");
  const liveStarted = Date.now();
  await live.click("#start");
  await live.waitForFunction(
    () => /^done|error/.test(document.getElementById("status").className + document.getElementById("status").textContent),
    null,
    { timeout: 20000 },
  );
  const liveStatus = await live.textContent("#status");
  const livePoints = await live.evaluate(() => document.querySelectorAll("#summary div").length);
  out.live = { status: liveStatus, seconds: (Date.now() - liveStarted) / 1000 };
  check(liveStatus.startsWith("done"), `live view: the run did not finish: ${liveStatus}`);
  check(livePoints > 0, "live view: no progress shown");
  await live.screenshot({ path: path.join(artifacts, "live-done.png") });
  await live.close();

  // The fleet view: labels, and a short fleet run (gate processes, a private redis-server
  // stopped for 4 s) streamed to its end, with every gate's mode through the outage.
  const fleet = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const fleetErrors = [];
  fleet.on("pageerror", (e) => fleetErrors.push(String(e)));
  await fleet.goto(url.replace(/\/?$/, "/fleet"), { waitUntil: "load" });
  const fleetUnlabelled = await unlabelledControls(fleet);
  check(fleetUnlabelled.length === 0, `fleet view: controls without a label: ${fleetUnlabelled.join(", ")}`);
  await fleet.fill("#nodes", "3");
  await fleet.fill("#secs", "10");
  await fleet.fill("#outage-start", "3");
  await fleet.fill("#outage-len", "4");
  await fleet.selectOption("#mode", "hybrid");
  const fleetStarted = Date.now();
  await fleet.click("#start");
  await fleet.waitForFunction(() => window.safegateFleet.done || window.safegateFleet.error, null, { timeout: 40000 });
  const f = await fleet.evaluate(() => {
    const s = window.safegateFleet;
    return {
      error: s.error,
      seconds: s.seconds.length,
      down: s.seconds.map((x, i) => (x.coordinator_up ? null : s.modes[i])).filter((m) => m !== null),
      last: s.modes[s.modes.length - 1],
      cells: document.querySelectorAll("#modes .track span").length,
      shaded: document.querySelectorAll("#track-coord .down").length,
      rows: document.querySelectorAll("#gates tbody tr").length,
      verdict: document.getElementById("verdict").textContent,
    };
  });
  out.fleet = { seconds: (Date.now() - fleetStarted) / 1000, verdict: f.verdict, down_modes: f.down };
  check(!f.error, `fleet view: ${f.error}`);
  check(f.seconds >= 8, `fleet view: ${f.seconds} seconds streamed, expected about 10`);
  check(f.down.length >= 3, `fleet view: ${f.down.length} seconds with the coordinator down, expected about 4`);
  check(f.down.flat().some((m) => m === "share"), `fleet view: no gate took its share in the outage: ${JSON.stringify(f.down)}`);
  // The first second down may still show a fresh grant (the detector needs 3 refresh intervals).
  check(f.down.slice(1).flat().every((m) => m === "frozen" || m === "share"), `fleet view: modes in the outage ${JSON.stringify(f.down)}`);
  check(f.last && f.last.every((m) => m === "granted" || m === "learning"), `fleet view: modes at the end ${JSON.stringify(f.last)}`);
  check(f.cells === 4 * f.seconds, `fleet view: ${f.cells} mode cells for 3 gates and the coordinator over ${f.seconds} s`);
  check(f.shaded === f.down.length, `fleet view: ${f.shaded} coordinator-down cells, ${f.down.length} seconds down`);
  check(f.rows === 3, `fleet view: ${f.rows} rows in the gates table`);
  check(/^Within the bound/.test(f.verdict), `fleet view: verdict ${JSON.stringify(f.verdict)}`);
  check(fleetErrors.length === 0, `fleet view: page errors: ${fleetErrors.join("; ")}`);
  await fleet.screenshot({ path: path.join(artifacts, "fleet-done.png"), fullPage: true });
  await fleet.setViewportSize({ width: 390, height: 844 });
  await fleet.waitForTimeout(300);
  const fleetNarrow = await fleet.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
  check(fleetNarrow.scroll <= fleetNarrow.inner, `fleet view, narrow: page ${fleetNarrow.scroll} px wide in ${fleetNarrow.inner} px`);
  await fleet.screenshot({ path: path.join(artifacts, "fleet-narrow-390.png"), fullPage: true });
  await fleet.close();
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
if (failures.length > 0) {
  console.error("browser check failed:\n  " + failures.join("\n  "));
  process.exit(1);
}
