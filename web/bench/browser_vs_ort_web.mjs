// Benchmark (not a test): the shared real models in one headless Chromium, on Tessera's cpu
// (wasm SIMD) and webgpu backends and on onnxruntime-web's wasm and webgpu backends, both on the
// same number of cpu threads (a cross-origin isolated page). Each model's two sessions of a backend
// are open at once; R rounds give each N timed runs in turn, the first after W warm-up runs
// (measure.js; default on one thread 3 rounds of 5, with threads 1 round of 15, the runtimes one
// after the other). Prints median latencies and ratios tessera/ort, one table per thread count.
// Usage: node bench/browser_vs_ort_web.mjs [--runs N] [--rounds R] [--warmup W] [--models a,b] [--backends cpu,webgpu]
//   [--threads 1,2]: the cpu thread counts (default 1); a fresh page for each.
//   [--profile N]: after the table, Tessera's cpu time per op type for each model (N runs).
import { chromium } from 'playwright-core';
import { startServer } from '../test/serve.mjs';
import { sharedModels } from '../test/models.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith('--') ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), []));
// Rounds taking turns on one thread; with threads one round, the runtimes one after the other
// (measure.js says why). 15 timed runs either way.
const roundsFor = (threads) => Number(args.rounds ?? (threads === 1 ? 3 : 1));
const runsFor = (threads) => Number(args.runs ?? 15 / roundsFor(threads));
const warmup = Number(args.warmup ?? 30);
const only = args.models?.split(',');
const backends = (args.backends ?? 'cpu,webgpu').split(',');
const profileRuns = args.profile ? Number(args.profile) : 0;
const threadCounts = (args.threads ?? '1').split(',').map(Number);
const models = sharedModels().filter((m) => !only || only.includes(m.name));

const server = await startServer();
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--enable-unsafe-webgpu'] });
for (const threads of threadCounts) {
  const page = await browser.newPage();
  const [rounds, runs] = [roundsFor(threads), runsFor(threads)];
  page.setDefaultTimeout(30 * 60_000);
  await page.goto(`${server.url}/bench/page.html?threads=${threads}`);
  await page.waitForFunction(() => window.benchReady === true);
  const adapter = await page.evaluate(async () => (await navigator.gpu?.requestAdapter())?.info?.architecture ?? 'none');
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  console.log(`Chromium ${browser.version()}, ${cores} cores, WebGPU adapter: ${adapter}; median of ${rounds} round(s) of ${runs} runs after ${warmup} warm-up${rounds > 1 ? ', the runtimes taking turns' : ', one runtime after the other'}; cpu on ${threads} thread(s) each` +
    (threads > cores ? ` (tessera on ${cores}: it runs at most one thread per core)` : ''));

  const fmt = (r) => (r.error === 'not measured' ? '–' : r.error ? 'error' : r.ms.toFixed(1));
  const ratio = (a, b) => (a.error || b.error ? '–' : (a.ms / b.ms).toFixed(2));
  const rows = [];
  console.log('| model | tessera cpu ms | ort-web wasm ms | cpu ratio | tessera webgpu ms | ort-web webgpu ms | webgpu ratio |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const model of models) {
    const r = {};
    for (const [backend, contenders] of [['cpu', { tc: { runtime: 'tessera', backend: 'cpu' }, oc: { runtime: 'ort', backend: 'wasm' } }], ['webgpu', { tg: { runtime: 'tessera', backend: 'webgpu' }, og: { runtime: 'ort', backend: 'webgpu' } }]]) {
      const measured = backends.includes(backend)
        ? await page.evaluate(([n, f, c, w, k, rr]) => window.bench(n, f, c, w, k, rr), [model.name, model.files, contenders, warmup, runs, rounds])
        : Object.fromEntries(Object.keys(contenders).map((key) => [key, { error: 'not measured' }]));
      Object.assign(r, measured);
    }
    rows.push(r);
    console.log(`| ${model.name} | ${fmt(r.tc)} | ${fmt(r.oc)} | ${ratio(r.tc, r.oc)} | ${fmt(r.tg)} | ${fmt(r.og)} | ${ratio(r.tg, r.og)} |`);
    for (const [k, v] of Object.entries(r)) if (v.error && v.error !== 'not measured') console.log(`  ${k}: ${v.error}`);
  }
  const geomean = (pairs) => {
    const ok = pairs.filter(([a, b]) => !a.error && !b.error);
    return ok.length ? Math.exp(ok.reduce((s, [a, b]) => s + Math.log(a.ms / b.ms), 0) / ok.length).toFixed(2) + ` over ${ok.length}` : '–';
  };
  console.log(`geomean tessera/ort-web: cpu ${geomean(rows.map((r) => [r.tc, r.oc]))}, webgpu ${geomean(rows.map((r) => [r.tg, r.og]))}`);
  for (const model of profileRuns ? models : []) {
    const p = await page.evaluate(([n, f, k]) => window.profileTessera(n, f, k), [model.name, model.files, profileRuns]);
    if (p.error) {
      console.log(`profile ${model.name}: ${p.error}`);
      continue;
    }
    const total = p.perOp.reduce((s, o) => s + o.msPerRun, 0);
    const top = p.perOp.slice(0, 8).map((o) => `${o.op} ${o.msPerRun.toFixed(2)} (${o.nodes})`).join(', ');
    console.log(`profile ${model.name}: ${total.toFixed(2)} ms/run: ${top}`);
  }
  await page.close();
}
await browser.close();
server.close();
