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
 * KNOWN TRAPS: corpus cases that still trap the module, each with the panic it hits (crate path
 * and message, as console_error_panic_hook prints it). All are tract panics reached from the
 * cpu backend's first run (where its plan is built): their sources are in tessera-core /
 * tessera-cpu and are fixed there, not in the wasm crate. They run after the rest of the corpus
 * (each kills its module instance; the next create starts a fresh one). When one is fixed this
 * test fails until its case is taken off this list; a case that traps and is not listed here
 * fails it too.
 */
const KNOWN_TRAPS = {
  'mtcnn_pnet/flipped@27914=201,7583=160': 'tract-core-0.23.9/src/ops/cnn/maxpool.rs:400:41: chunk size must be non-zero',
  'mtcnn_pnet/flipped@1805=81,6856=20,5402=63,23758=23': 'tract-core-0.23.9/src/ops/cnn/maxpool.rs:400:41: chunk size must be non-zero',
  'mtcnn_pnet/flipped@9827=184,4986=44,1968=33': 'tract-core-0.23.9/src/ops/cnn/maxpool.rs:400:41: chunk size must be non-zero',
  'mtcnn_pnet/flipped@8182=156,1896=31': 'tract-core-0.23.9/src/ops/cnn/maxpool.rs:400:41: chunk size must be non-zero',
  'mtcnn_pnet/flipped@13498=210,4199=11': 'tract-core-0.23.9/src/ops/cnn/maxpool.rs:400:41: chunk size must be non-zero',
  'mtcnn_pnet/flipped@3689=169': 'tract-core-0.23.9/src/ops/cnn/maxpool.rs:400:41: chunk size must be non-zero',
  'mtcnn_pnet/flipped@21396=54': 'tract-core-0.23.9/src/ops/cnn/maxpool.rs:400:41: chunk size must be non-zero',
  'mtcnn_pnet/flipped@6001=112,28509=134,3892=219': 'tract-core-0.23.9/src/ops/cnn/maxpool.rs:400:41: chunk size must be non-zero',
  'semantic/gather_const_indices_oob': 'tract-core-0.23.9/src/ops/array/gather.rs:85:59: range start index 20 out of range for slice of length 6',
  'semantic/gather_const_indices_negative_oob': 'tract-core-0.23.9/src/ops/array/gather.rs:75:52: index out of bounds: the len is 6 but the index is 4294967199',
  'semantic/gather_input_const_indices_oob': 'tract-core-0.23.9/src/ops/array/gather.rs:85:59: range start index 21 out of range for slice of length 6',
  'semantic/gather_elements_const_data_oob': 'ndarray-0.17.2/src/arraytraits.rs:36:5: ndarray: index out of bounds',
  'semantic/gather_nd_const_oob': 'tract-core-0.23.9/src/ops/array/gather_nd.rs:72:23: assertion failed: index < dim',
  'semantic/scatter_elements_const_oob': 'ndarray-0.17.2/src/arraytraits.rs:36:5: ndarray: index out of bounds',
  'semantic/constant_of_shape_huge': 'tract-core-0.23.9/src/model/fact.rs:21:9: assertion failed: self.dims.iter().all(|d| d.as_i64().map(|d| d >= 0).unwrap_or(true))',
  'semantic/constant_of_shape_negative': 'tract-core-0.23.9/src/model/fact.rs:21:9: assertion failed: self.dims.iter().all(|d| d.as_i64().map(|d| d >= 0).unwrap_or(true))',
  'semantic/tile_negative': 'tract-core-0.23.9/src/model/fact.rs:21:9: assertion failed: self.dims.iter().all(|d| d.as_i64().map(|d| d >= 0).unwrap_or(true))',
  'semantic/transpose_bad_perm': 'smallvec-1.16.6/src/lib.rs:368:54: capacity overflow',
  'semantic/transpose_perm_oob': 'tract-hir-0.23.9/src/ops/array/permute_axes.rs:21:33: index out of bounds: the len is 2 but the index is 9',
  'semantic/unsqueeze_axis_oob': 'smallvec-1.16.6/src/lib.rs:1538:17: index exceeds length',
  'semantic/flatten_axis_oob': 'tract-hir-0.23.9/src/ops/array/flatten.rs:15:18: range end index 6 out of range for slice of length 2',
  'semantic/reduce_axes_oob': 'tract-hir-0.23.9/src/ops/nn/reduce.rs:124:63: called `Result::unwrap()` on an `Err` value: Illegal combination of values for rank and axis: 2 and 12',
  'semantic/pad_negative_past_size': 'ndarray-0.17.2/src/impl_constructors.rs:329:20: ndarray: Shape too large, product of non-zero axis lengths overflows isize',
  'semantic/maxpool_zero_stride': 'tract-core-0.23.9/src/ops/cnn/padding.rs:254:75: attempt to divide by zero',
  'semantic/resize_huge_scales': 'library/alloc/src/raw_vec/mod.rs:28:5: capacity overflow',
};

/**
 * Semantically damaged models that tessera runs anyway (no Error, no trap): the ONNX checker
 * refuses them, tract makes something of them. Listed so that they are seen; refusing one of
 * them with an Error is fine too.
 */
const RUN_ANYWAY = [
  'semantic/range_nan', 'semantic/softmax_axis_oob', 'semantic/topk_k_too_big', 'semantic/pad_huge',
  'semantic/conv_kernel_bigger_than_input', 'semantic/duplicate_output_name', 'semantic/unknown_domain',
  'semantic/input_huge_dims', 'semantic/input_negative_dim', 'semantic/opset_huge', 'semantic/opset_zero',
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
  const all = [...report.results, ...report.trapResults];
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
  good(report.goodAfterTraps, 'after the known traps');
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
  // Every damaged model not listed as a known trap: an Error with a message, or it ran; and the
  // module instance is the one the good model was loaded in, alive.
  const instance = report.good.instance;
  const unexpected = report.results.filter((r) => !['error', 'ran'].includes(r.outcome));
  assert.deepEqual(unexpected.map((r) => `${r.name}: ${r.outcome}: ${r.message}`), [], 'cases that trapped (or threw a non-Error)');
  for (const r of report.results) {
    if (r.outcome === 'error') assert.ok(r.message.length > 10, `${r.name}: an Error without a message`);
    assert.deepEqual(r.after, { instance, dead: null }, `${r.name}: the module instance changed`);
  }
  const ran = report.results.filter((r) => r.name.startsWith('semantic/') && r.outcome === 'ran');
  assert.deepEqual(ran.map((r) => r.name).filter((n) => !RUN_ANYWAY.includes(n)), [], 'semantically damaged models that ran');
  assert.equal(report.goodAfterCorpus.instance, instance);
  assert.equal(report.goodFresh.instance, instance);
  // The known traps still trap (take a case off the list when its panic is fixed).
  assert.deepEqual(report.unknownKnownTraps, [], 'KNOWN_TRAPS names cases the corpus does not have');
  const fixed = report.trapResults.filter((r) => r.outcome !== 'trap');
  assert.deepEqual(fixed.map((r) => `${r.name}: ${r.outcome}: ${r.message}`), [], 'known traps that no longer trap: take them off KNOWN_TRAPS');
  for (const r of report.trapResults) {
    assert.match(r.message, /tessera's wasm module trapped: .*panicked at /s, `${r.name}: the trap's Error lacks the panic`);
    const where = KNOWN_TRAPS[r.name].split(':')[0]; // the file: line numbers move with toolchains
    assert.ok(r.message.includes(where), `${r.name} now traps elsewhere than ${where}: ${r.message}`);
  }
  if (report.trapResults.length) {
    assert.equal(report.oldSession.outcome, 'trap', 'a session of a trapped instance must reject with the trap');
    assert.ok(report.goodAfterTraps.instance > instance, 'after a trap, create starts a fresh instance');
  }
  assert.equal(report.status.dead, null);
}

function checkDeliberate(report) {
  assert.ok(report.before.pass);
  assert.equal(report.trap.outcome, 'trap');
  assert.match(report.trap.message, /^tessera's wasm module trapped: panicked at .*tessera-wasm.*deliberate panic from the tests/s);
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
    report = await runAll(read, Object.keys(KNOWN_TRAPS));
  } finally {
    console.error = printed;
  }
  console.log(summary('Node.js', report));
  assert.equal(panics, report.trapResults.length + report.results.filter((r) => r.outcome === 'trap').length);
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
    const report = await page.evaluate((known) => window.corpus.runAll(window.readAny, known), Object.keys(KNOWN_TRAPS));
    console.log(summary('Chromium', report));
    check(report);
    assert.deepEqual(uncaught, [], 'uncaught errors in the page');
  });

  test('Chromium: after a trap, old sessions fail clearly and create starts a fresh module', async () => {
    const report = await page.evaluate(() => window.corpus.deliberateTrap(window.readAny, window.tessera.trapForTests));
    checkDeliberate(report);
    assert.deepEqual(uncaught, [], 'uncaught errors in the page');
  });

  test('Chromium: a trap in the futures queue (as while waiting for WebGPU) rejects what is pending', async () => {
    const report = await page.evaluate(() => window.corpus.deliberateTrap(
      window.readAny, (message) => window.tessera.trapForTests(message, { afterAwait: true })));
    checkDeliberate(report);
    // The RuntimeError itself leaves the futures queue's microtask: the page sees it, uncaught.
    assert.deepEqual(uncaught.splice(0), ['unreachable']);
  });
});
