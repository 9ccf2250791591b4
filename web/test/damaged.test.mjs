// Damaged models and hostile inputs must never trap the wasm module (a panic aborts in wasm, and
// the module instance is dead from then on): in Node.js and in headless Chromium, each case of
// test/corpus.js is refused with a JS Error carrying the runtime's message (or runs), and the
// good model still loads and runs correctly in the same module instance afterwards. The corpus:
// seeded truncations, byte flips and random tails of real models, random buffers, and the
// protobuf-valid but semantically broken models of test/corpus/semantic (make_corpus.py).
// Also: what the package's JS layer does when the module does trap (a deliberate panic).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { trapForTests, WASM_TRAP } from '../dist/index.js';
import { runAll, deliberateTrap } from './corpus.js';
import { startServer, shared } from './serve.mjs';

/**
 * Semantically damaged models that tessera runs anyway (no Error, no trap): the ONNX checker
 * refuses them, tract makes something of them. Listed so that they are seen; refusing one of
 * them with an Error is fine too.
 */
const RUN_ANYWAY = [
  'semantic/range_nan', 'semantic/topk_k_too_big', 'semantic/conv_kernel_bigger_than_input', 'semantic/duplicate_output_name', 'semantic/unknown_domain',
  'semantic/input_huge_dims', 'semantic/input_negative_dim', 'semantic/opset_huge', 'semantic/opset_zero',
  'semantic/scatter_nd_scalar_data', 'semantic/softmax_qdq_zero_scale', 'semantic/grid_sample_border_empty_input',
  'semantic/resize_nearest_empty_axis',
];

/**
 * Models of the corpus that are valid ONNX at an edge tract 0.23.9 panicked on (empty axes,
 * negative pads, a fractional Range step): they must run.
 */
const MUST_RUN = [
  'semantic/pad_negative_crop', 'semantic/pad_axes_negative_crop', 'semantic/range_fractional_delta',
  'semantic/reduce_sum_empty_last_axis', 'semantic/reduce_mean_empty_last_axis',
  'semantic/reduce_sum_square_empty_last_axis', 'semantic/reduce_l2_empty_last_axis', 'semantic/softmax_f64_empty_axis',
];

const web = fileURLToPath(new URL('..', import.meta.url));
const MOUNTS = {
  'examples/': resolve(web, '..', 'examples'),
  'models/': join(shared, 'models'),
  'node/': join(shared, 'onnx-tests', 'node'),
  'test/': join(web, 'test'),
};
const read = async (path) => {
  const prefix = Object.keys(MOUNTS).find((p) => path.startsWith(p));
  return new Uint8Array(await readFile(join(MOUNTS[prefix], path.slice(prefix.length))));
};

function summary(where, report) {
  const all = report.results;
  const count = (o) => all.filter((r) => r.outcome === o).length;
  const lines = [
    `${where}: ${all.length} damaged models: ${count('error')} refused with an Error, ${count('ran')} ran, ${count('trap')} trapped` +
      `; ${Object.keys(report.bad).length + Object.keys(report.edge).length} hostile inputs; times ${JSON.stringify(report.time)} ms`,
  ];
  for (const r of all.filter((r) => r.outcome !== 'error' && r.outcome !== 'ran')) {
    lines.push(`  ${r.outcome.toUpperCase()} ${r.name} (${r.stage}): ${r.message.split('\n').slice(0, 3).join(' | ')}`);
  }
  if (process.env.TESSERA_CORPUS_VERBOSE) {
    for (const r of all) lines.push(`  ${r.outcome.padEnd(5)} ${r.stage.padEnd(6)} ${r.name}: ${r.message.split('\n')[0].slice(0, 160)}`);
    for (const [k, v] of Object.entries({ ...report.bad, ...report.edge })) lines.push(`  input ${v.outcome.padEnd(5)} ${k}: ${v.message.split('\n')[0].slice(0, 160)}`);
  }
  return lines.join('\n');
}

function check(report) {
  const good = (g, what) => assert.ok(g.pass, `${what}: the good model fails: ${g.error ?? `max abs ${g.maxAbs}, dims ${g.dims}`}`);
  good(report.good, 'before the corpus');
  good(report.goodAfterInputs, 'after the hostile inputs');
  good(report.goodAfterCorpus, 'after the corpus, same session');
  good(report.goodFresh, 'after the corpus, new session');
  // Every hostile input is an Error (the runtime's or the Tensor constructor's), never a trap.
  for (const [what, r] of Object.entries(report.bad)) {
    assert.equal(r.outcome, 'error', `bad input '${what}': ${r.outcome} ${r.message}`);
    assert.ok(r.message.length > 10, `bad input '${what}': an Error without a message`);
  }
  for (const [what, r] of Object.entries(report.edge)) {
    assert.ok(['ran', 'error'].includes(r.outcome), `input '${what}': ${r.outcome} ${r.message}`);
  }
  assert.match(report.bad['forged dims [1e12]'].message, /input '.*'.*dims \[1000000000000\] hold more elements than fit/);
  assert.match(report.bad['forged dims [65536, 65536, 0 data]'].message, /hold more elements than fit/);
  assert.match(report.bad['wrong dtype'].message, /wrong dtype int32/);
  // Every damaged model: an Error with a message, or it ran; and the module instance is the one
  // the good model was loaded in, alive.
  const instance = report.good.instance;
  const unexpected = report.results.filter((r) => !['error', 'ran'].includes(r.outcome));
  assert.deepEqual(unexpected.map((r) => `${r.name}: ${r.outcome}: ${r.message}`), [], 'cases that trapped (or threw a non-Error)');
  for (const r of report.results) {
    if (r.outcome === 'error') assert.ok(r.message.length > 10, `${r.name}: an Error without a message`);
    assert.deepEqual(r.after, { instance, dead: null }, `${r.name}: the module instance changed`);
  }
  const ran = report.results.filter((r) => r.name.startsWith('semantic/') && r.outcome === 'ran');
  assert.deepEqual(ran.map((r) => r.name).filter((n) => !RUN_ANYWAY.includes(n) && !MUST_RUN.includes(n)), [], 'semantically damaged models that ran');
  const refused = MUST_RUN.map((name) => report.results.find((r) => r.name === name) ?? { name, outcome: 'missing' });
  assert.deepEqual(refused.filter((r) => r.outcome !== 'ran').map((r) => `${r.name}: ${r.outcome}: ${r.message}`), [], 'valid edge cases that did not run');
  assert.equal(report.goodAfterCorpus.instance, instance);
  assert.equal(report.goodFresh.instance, instance);
  assert.equal(report.status.dead, null);
}

// The threaded module is built without panic locations (`-Z location-detail=none`, web/build.sh):
// its panics say `<redacted>:0:0` where the one-threaded module's name the file.
const TRAPPED = /^tessera's wasm module trapped: panicked at .*tessera-wasm.*deliberate panic from the tests/s;
const TRAPPED_THREADED = /^tessera's wasm module trapped: panicked at <redacted>:0:0:\s*deliberate panic from the tests/s;

function checkDeliberate(report, message = TRAPPED) {
  assert.ok(report.before.pass);
  assert.equal(report.trap.outcome, 'trap');
  assert.match(report.trap.message, message);
  assert.match(report.statusDead.dead, /deliberate panic from the tests/);
  assert.equal(report.statusDead.instance, report.statusBefore.instance);
  // The old session: clear Errors, no hang; release works.
  assert.equal(report.run.outcome, 'trap', report.run.message);
  assert.match(report.run.message, /deliberate panic from the tests.*InferenceSession\.create starts a fresh one/s);
  assert.equal(report.backend.outcome, 'trap', report.backend.message);
  assert.equal(report.release.outcome, 'ran', report.release.message);
  // A fresh instance runs the good model.
  assert.ok(report.after.pass);
  assert.equal(report.after.instance, report.statusBefore.instance + 1);
  assert.deepEqual(report.statusAfter, { instance: report.statusBefore.instance + 1, dead: null });
}

test('Node.js: damaged models and hostile inputs are Errors, the module survives', { timeout: 5 * 60_000 }, async () => {
  // console_error_panic_hook prints each panic with its stack: kept out of the test's output.
  const printed = console.error;
  let panics = 0;
  console.error = (...args) => (/panicked at/.test(String(args[0])) ? panics++ : printed(...args));
  let report;
  try {
    report = await runAll(read);
  } finally {
    console.error = printed;
  }
  console.log(summary('Node.js', report));
  assert.equal(panics, 0, 'panics printed by the module');
  check(report);
});

test('Node.js: after a trap, old sessions fail clearly and create starts a fresh module', async () => {
  const report = await deliberateTrap(read, trapForTests);
  checkDeliberate(report);
  assert.equal(WASM_TRAP, 'TESSERA_WASM_TRAP');
});

describe('in headless Chromium', () => {
  let server;
  let browser;
  let page;
  const uncaught = [];

  before(async () => {
    server = await startServer();
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium' });
    page = await browser.newPage();
    page.on('pageerror', (error) => uncaught.push(error.message));
    page.setDefaultTimeout(5 * 60_000);
    await page.goto(`${server.url}/test/page.html`);
    await page.waitForFunction(() => window.tesseraReady === true);
    await page.evaluate(async () => {
      window.corpus = await import('/test/corpus.js');
      // `f()` with the corpus on the threaded module (2 threads), then back on the one-threaded.
      window.onThreaded = async (f) => {
        window.corpus.useThreads(2);
        try {
          return await f();
        } finally {
          window.corpus.useThreads(1);
        }
      };
      window.readAny = async (path) => {
        const response = await fetch(`/${path}`);
        if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
        return new Uint8Array(await response.arrayBuffer());
      };
    });
  });

  after(async () => {
    await browser?.close();
    server?.close();
  });

  test('Chromium: damaged models and hostile inputs are Errors, the module survives', { timeout: 5 * 60_000 }, async () => {
    const report = await page.evaluate(() => window.corpus.runAll(window.readAny));
    console.log(summary('Chromium', report));
    check(report);
    assert.deepEqual(uncaught, [], 'uncaught errors in the page');
  });

  test('Chromium: after a trap, old sessions fail clearly and create starts a fresh module', async () => {
    const report = await page.evaluate(() => window.corpus.deliberateTrap(window.readAny, window.tessera.trapForTests));
    checkDeliberate(report);
    assert.deepEqual(uncaught, [], 'uncaught errors in the page');
  });

  test('Chromium, threaded module: damaged models and hostile inputs are Errors, the module survives', { timeout: 5 * 60_000 }, async () => {
    const report = await page.evaluate(() => window.onThreaded(() => window.corpus.runAll(window.readAny)));
    console.log(summary('Chromium, threaded', report));
    check(report);
    assert.deepEqual(uncaught, [], 'uncaught errors in the page');
  });

  test('Chromium, threaded module: after a trap, old sessions fail clearly and create starts a fresh module', async () => {
    const report = await page.evaluate(() => window.onThreaded(() => window.corpus.deliberateTrap(
      window.readAny, (message) => window.tessera.trapThreadedForTests(message))));
    checkDeliberate(report, TRAPPED_THREADED);
    assert.deepEqual(uncaught, [], 'uncaught errors in the page');
  });

  test('Chromium, threaded module: a trap on a worker of the pool (as during a run) rejects the run, never hangs', async () => {
    const report = await page.evaluate(() => window.onThreaded(() => window.corpus.deliberateTrap(
      window.readAny, (message) => window.tessera.trapThreadedForTests(message, { onWorker: true }))));
    checkDeliberate(report, /^tessera's wasm module trapped: panicked at <redacted>:0:0:\s*a worker of the thread pool panicked: panicked at <redacted>:0:0:\s*deliberate panic from the tests/s);
    // The worker traps, then the page's thread panics in the futures queue, where the run was
    // waiting: both uncaught there, the worker's on its own schedule — once in CI on a loaded
    // 2-core machine only one of the two had reached the page after 5 s, so one or two, and
    // nothing but those traps.
    for (let waited = 0; uncaught.length < 2 && waited < 5000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    const seen = uncaught.splice(0);
    assert.ok(seen.length >= 1 && seen.length <= 2 && seen.every((m) => m === 'unreachable'),
      `uncaught in the page: ${JSON.stringify(seen)}`);
  });

  test('Chromium: a trap in the futures queue (as while waiting for WebGPU) rejects what is pending', async () => {
    const report = await page.evaluate(() => window.corpus.deliberateTrap(
      window.readAny, (message) => window.tessera.trapForTests(message, { afterAwait: true })));
    checkDeliberate(report);
    // The RuntimeError itself leaves the futures queue's microtask: the page sees it, uncaught.
    assert.deepEqual(uncaught.splice(0), ['unreachable']);
  });
});
