// The package in a real browser: headless Chromium (Debian's, or CHROMIUM=path) driven by
// Playwright, with WebGPU on (SwiftShader where there is no GPU). Every shared real model runs
// on webgpu and on cpu and is compared with its expected outputs; the error paths must leave
// the session usable; the demo page is screenshotted and its rendered result checked.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { PNG } from 'pngjs';
import { startServer } from './serve.mjs';
import { sharedModels } from './models.mjs';

const MODELS = sharedModels();
const MINUTES = 60_000;
let server;
let browser;
let page;
const pageErrors = [];

before(async () => {
  server = await startServer();
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--enable-unsafe-webgpu'],
  });
  page = await browser.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(message.text());
  });
  page.setDefaultTimeout(10 * MINUTES);
  await page.goto(`${server.url}/test/page.html`);
  await page.waitForFunction(() => window.tesseraReady === true);
});

after(async () => {
  await browser?.close();
  server?.close();
});

function table(results) {
  return results
    .map((r) => `${r.pass ? 'ok  ' : 'FAIL'} ${r.model.padEnd(28)} ${r.backend.padEnd(7)} load ${r.loadMs.toFixed(0).padStart(6)} ms  run ${r.runMs.toFixed(0).padStart(6)} ms  ${r.outputs.map((o) => (o.why ? `${o.output}: ${o.why}` : `max abs ${o.maxAbs.toExponential(2)}`)).join(', ')}`)
    .join('\n');
}

// The cpu on one thread (the module with WebGPU) and on two (the threaded module: the test page
// is cross-origin isolated).
const CONFIGS = [
  { label: 'webgpu', backend: 'webgpu', options: {}, threads: 1 },
  { label: 'cpu', backend: 'cpu', options: { numThreads: 1 }, threads: 1 },
  { label: 'cpu on 2 threads', backend: 'cpu', options: { numThreads: 2 }, threads: 2 },
];

for (const { label, backend, options, threads } of CONFIGS) {
  test(`every shared real model on ${label} matches its expected outputs`, { timeout: 30 * MINUTES }, async () => {
    const results = [];
    for (const model of MODELS) {
      const result = await page.evaluate(
        ([name, backend, files, options]) => window.checkModel(name, backend, files, options),
        [model.name, backend, model.files, options],
      );
      results.push(result);
      // Strict placement: the whole model on the requested backend, nothing quietly elsewhere.
      assert.equal(result.backend, backend, `${model.name} ran on ${result.backend}`);
      assert.equal(result.threads, threads, `${model.name}: ${result.reason}`);
    }
    console.log(`${label} in Chromium:\n${table(results)}`);
    const failed = results.filter((r) => !r.pass).map((r) => r.model);
    assert.equal(MODELS.length, 20, 'the shared folder holds 20 real models');
    assert.deepEqual(failed, [], `models outside tolerance on ${label}`);
  });
}

test('the threaded module runs on its pool of workers, says so, and pooled runs give the same outputs', async () => {
  const info = await page.evaluate(async () => {
    const { InferenceSession, readTensorProto, moduleStatus } = window.tessera;
    const bytes = await window.readModel('light_squeezenet/model.onnx');
    const session = await InferenceSession.create(bytes, { backend: 'cpu', numThreads: 2 });
    const { name, tensor } = await readTensorProto(await window.readModel('light_squeezenet/test_data_set_0/input_0.pb'));
    // The first runs of a plan compare one thread with the pool, a block of each (the pool's
    // after a warm-up): 16 runs reach the pooled ones whatever the timings.
    let first;
    let differing = 0;
    for (let i = 0; i < 16; i++) {
      const out = Object.values(await session.run({ [name]: tensor }))[0].data;
      first ??= out;
      if (out.some((v, j) => v !== first[j])) differing++;
    }
    const info = { isolated: crossOriginIsolated, threads: session.numThreads, reason: session.backendReason, status: moduleStatus(), differing };
    await session.release();
    return info;
  });
  assert.equal(info.isolated, true);
  assert.equal(info.threads, 2);
  assert.match(info.reason, /^cpu requested; 2 threads \(wasm threads\)$/);
  assert.equal(info.status.threaded.threads, 2);
  assert.equal(info.status.threaded.dead, null);
  // tract and Tessera split work only along whole rows and panels: bit-identical outputs.
  assert.equal(info.differing, 0, 'runs whose outputs differ from the first');
});

test('a page that is not cross-origin isolated runs the cpu on one thread and warns why', async () => {
  const plain = await startServer(0, { isolated: false });
  const other = await browser.newPage();
  const warnings = [];
  other.on('console', (message) => {
    if (message.type() === 'warning') warnings.push(message.text());
  });
  try {
    await other.goto(`${plain.url}/test/page.html`);
    await other.waitForFunction(() => window.tesseraReady === true);
    const result = await other.evaluate(async (files) => {
      const isolated = crossOriginIsolated;
      const check = await window.checkModel('mtcnn_rnet', 'cpu', files, { numThreads: 2 });
      return { isolated, check, status: window.tessera.moduleStatus() };
    }, MODELS.find((m) => m.name === 'mtcnn_rnet').files);
    assert.equal(result.isolated, false);
    assert.equal(result.check.pass, true);
    assert.equal(result.check.threads, 1);
    assert.match(result.check.reason, /^cpu requested; 1 thread: the page is not cross-origin isolated/);
    assert.equal(result.status.threaded.instance, 0, 'the threaded module is not loaded');
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0], /not cross-origin isolated.*1 thread instead of 2.*Cross-Origin-Opener-Policy: same-origin.*Cross-Origin-Embedder-Policy: require-corp/);
  } finally {
    await other.close();
    plain.close();
  }
});

test('webgpu reports the browser adapter it runs on', async () => {
  const info = await page.evaluate(async () => {
    const bytes = await window.readModel('mtcnn_rnet/model.onnx');
    const session = await window.tessera.InferenceSession.create(bytes, { backend: 'webgpu' });
    const info = { backend: session.backend, device: session.device, reason: session.backendReason };
    await session.release();
    return info;
  });
  assert.equal(info.backend, 'webgpu');
  assert.match(info.device, /BrowserWebGpu/);
  assert.equal(info.reason, 'wgpu requested');
});

test('placement says which device runs each step and what crosses to the cpu', async () => {
  const result = await page.evaluate(async () => {
    const { InferenceSession, Tensor } = window.tessera;
    // Relu -> Reshape -> Det -> Mul; WebGPU has no Det.
    const bytes = new Uint8Array(await (await fetch('/testdata/diagnostics/det.onnx')).arrayBuffer());
    const x = new Tensor('float32', Float32Array.from({ length: 16 }, (_, i) => (i % 5) - 1), [1, 16]);
    const strict = await InferenceSession.create(bytes, { backend: 'webgpu' }).then(() => 'loaded', (e) => e.message);
    const session = await InferenceSession.create(bytes, { backend: 'webgpu', allowFallback: true });
    const placement = await session.placement({ x });
    const out = await session.run({ x });
    await session.release();
    return { strict, placement, scores: Array.from(out.scores.data) };
  });
  assert.match(result.strict, /Det/, 'strict placement refuses the op it lacks');
  const { placement } = result;
  assert.equal(placement.backend, 'webgpu');
  assert.match(placement.device, /BrowserWebGpu/);
  const onCpu = placement.steps.filter((s) => s.runsOn === 'cpu');
  assert.deepEqual(onCpu.map((s) => s.op), ['Det'], JSON.stringify(placement.steps));
  assert.ok(onCpu[0].why.length > 0);
  assert.ok(placement.steps.filter((s) => s.runsOn === 'webgpu').length >= 2);
  const det = placement.steps.findIndex((s) => s.runsOn === 'cpu');
  const fallback = placement.copies.filter((c) => c.cause === 'fallback');
  // The Det's input comes back to the cpu, its output goes up again for the Mul.
  assert.deepEqual(fallback.map((c) => [c.direction, c.beforeStep]), [['toHost', det], ['toDevice', det + 1]]);
  assert.deepEqual(placement.copies.filter((c) => c.cause === 'inputOutput').map((c) => c.direction).sort(), ['toDevice', 'toHost']);
  assert.ok(placement.copies.every((c) => c.bytes > 0));
  assert.equal(result.scores.length, 1);
});

test("outputs kept in WebGPU memory feed the next run with nothing copied ('gpu-buffer')", async () => {
  const r = await page.evaluate(async () => {
    const { InferenceSession, Tensor } = window.tessera;
    const bytes = new Uint8Array(await (await fetch('/node/test_neg/model.onnx')).arrayBuffer());
    const values = Float32Array.from({ length: 60 }, (_, i) => i / 7 - 3);
    const x = new Tensor('float32', values, [3, 4, 5]);
    const neg = await InferenceSession.create(bytes, { backend: 'webgpu', preferredOutputLocation: 'gpu-buffer' });
    const first = (await neg.run({ x })).y;
    const firstCopies = neg.lastTransfers;
    let readData;
    try { readData = first.data; } catch (error) { readData = error.message; }
    // neg(neg(x)) on the GPU, straight from the first run's output.
    const second = (await neg.run({ x: first })).y;
    const secondCopies = neg.lastTransfers;
    // A session that reads its outputs back: only the output crosses.
    const toCpu = await InferenceSession.create(bytes, { backend: 'webgpu' });
    const third = (await toCpu.run({ x: second })).y;
    const thirdCopies = toCpu.lastTransfers;
    const cpu = await InferenceSession.create(bytes, { backend: 'cpu' });
    const cpuRefusal = await cpu.run({ x: first }).then(() => 'ran', (e) => e.message);
    const cpuOutput = (await cpu.run({ x })).y;
    first.dispose();
    const disposedRefusal = await neg.run({ x: first }).then(() => 'ran', (e) => e.message);
    const result = {
      locations: [first.location, second.location, third.location, cpuOutput.location],
      dims: second.dims,
      readData,
      firstCopies,
      secondCopies,
      thirdCopies,
      cpuLastTransfers: cpu.lastTransfers ?? null,
      second: Array.from(await second.getData()),
      third: Array.from(third.data),
      values: Array.from(values),
      cpuRefusal,
      disposedRefusal,
    };
    second.dispose();
    await Promise.all([neg.release(), toCpu.release(), cpu.release()]);
    return result;
  });
  assert.deepEqual(r.locations, ['gpu-buffer', 'gpu-buffer', 'cpu', 'cpu']);
  assert.deepEqual(r.dims, [3, 4, 5]);
  assert.match(r.readData, /WebGPU memory.*getData/);
  assert.deepEqual(r.firstCopies, { inputBytes: 240, outputBytes: 0, fallbackBytes: 0, countBytes: 0 });
  assert.deepEqual(r.secondCopies, { inputBytes: 0, outputBytes: 0, fallbackBytes: 0, countBytes: 0 });
  assert.deepEqual(r.thirdCopies, { inputBytes: 0, outputBytes: 240, fallbackBytes: 0, countBytes: 0 });
  assert.equal(r.cpuLastTransfers, null);
  // Negation is exact: twice gives the input back, bit for bit.
  assert.deepEqual(r.second, r.values);
  assert.deepEqual(r.third, r.values.map((v) => -v));
  assert.match(r.cpuRefusal, /in WebGPU memory and this session runs on the cpu.*getData/);
  assert.match(r.disposedRefusal, /disposed/);
});

test('auto says which backend it picked and why', async () => {
  const info = await page.evaluate(async () => {
    const bytes = await window.readModel('mtcnn_rnet/model.onnx');
    const session = await window.tessera.InferenceSession.create(bytes, { backend: 'auto' });
    const info = { backend: session.backend, reason: session.backendReason };
    await session.release();
    return info;
  });
  assert.ok(['webgpu', 'cpu'].includes(info.backend));
  assert.match(info.reason, new RegExp(`^auto picked ${info.backend === 'webgpu' ? 'wgpu' : 'cpu'}`));
});

for (const { label, backend, options } of CONFIGS) {
  test(`bad input on ${label} is a clear Error and the session keeps working`, async () => {
    const outcome = await page.evaluate(async ([backend, options]) => {
      const { InferenceSession, Tensor } = window.tessera;
      const errors = {};
      const attempt = async (what, run) => {
        try {
          await run();
          errors[what] = null;
        } catch (error) {
          errors[what] = `${error instanceof Error ? 'Error' : typeof error}: ${error.message}`;
        }
      };
      await attempt('bad model bytes', () => InferenceSession.create(new Uint8Array([8, 1, 18, 255, 255, 0, 1]), { backend, ...options }));
      await attempt('not a model', () => InferenceSession.create(new TextEncoder().encode('hello'), { backend, ...options }));
      await attempt('bad numThreads', () => InferenceSession.create(new Uint8Array(1), { backend, numThreads: 1.5 }));
      const session = await InferenceSession.create(await window.readModel('mtcnn_rnet/model.onnx'), { backend, ...options });
      const x = new Tensor('float32', new Float32Array(24 * 24 * 3).fill(0.5), [1, 24, 24, 3]);
      const good = async () => {
        const out = await session.run({ input_2: x });
        return Object.keys(out).map((k) => `${k}:${out[k].type}[${out[k].dims}]`).join(' ');
      };
      const first = await good();
      await attempt('wrong input name', () => session.run({ nope: x }));
      await attempt('wrong shape', () => session.run({ input_2: new Tensor('float32', new Float32Array(10), [1, 10]) }));
      await attempt('wrong dtype', () => session.run({ input_2: new Tensor('int32', new Int32Array(24 * 24 * 3), [1, 24, 24, 3]) }));
      await attempt('missing input', () => session.run({}));
      await attempt('unknown output', () => session.run({ input_2: x }, ['nope']));
      await attempt('size mismatch', async () => new Tensor('float32', new Float32Array(5), [2, 3]));
      await attempt('unknown type', async () => new Tensor('complex64', new Float32Array(2), [2]));
      const after = await good();
      await session.release();
      await attempt('run after release', () => session.run({ input_2: x }));
      return { errors, first, after };
    }, [backend, options]);
    const e = outcome.errors;
    assert.match(e['bad model bytes'], /^Error: .*(model|protobuf|decod)/i);
    assert.match(e['not a model'], /^Error: .*(model|protobuf|decod)/i);
    assert.match(e['wrong input name'], /^Error: .*nope.*input_2|^Error: .*input_2.*nope/);
    assert.match(e['wrong shape'], /^Error: .*input_2.*(rank|shape|dim)/i);
    assert.match(e['wrong dtype'], /^Error: .*input_2.*dtype int32/);
    assert.match(e['missing input'], /^Error: .*input_2/);
    assert.match(e['unknown output'], /^Error: unknown output 'nope'/);
    assert.match(e['size mismatch'], /^Error: dims \[2,3\] hold 6 elements but data has 5/);
    assert.match(e['unknown type'], /^Error: unsupported tensor type 'complex64'/);
    assert.match(e['run after release'], /^Error: this session was released/);
    assert.match(e['bad numThreads'], /^Error: numThreads must be a non-negative integer/);
    assert.match(outcome.first, /dense_2:float32\[1,4\] softmax_1:float32\[1,2\]/);
    assert.equal(outcome.after, outcome.first);
    assert.deepEqual(pageErrors.filter((m) => /panicked|unreachable|RuntimeError/.test(m)), []);
  });
}

test('the demo page renders its result', { timeout: 10 * MINUTES }, async () => {
  const demo = await browser.newPage({ viewport: { width: 900, height: 640 } });
  await demo.goto(`${server.url}/demo/index.html`);
  await demo.waitForFunction(() => document.querySelector('#result')?.dataset.state === 'done', null, { timeout: 10 * MINUTES });
  const text = await demo.textContent('#result');
  const backend = await demo.textContent('#backend');
  const shot = PNG.sync.read(await demo.screenshot());
  await demo.close();
  // The typed text is upright: the classifier must say 0°, and say it with confidence.
  assert.match(text, /upright \(0°\), \d+(\.\d+)?% sure/);
  assert.match(backend, /^(webgpu|cpu): /);
  // Not blank: a fair share of the pixels differ from the page background.
  let ink = 0;
  for (let i = 0; i < shot.data.length; i += 4) {
    if (shot.data[i] < 200 || shot.data[i + 1] < 200 || shot.data[i + 2] < 200) ink++;
  }
  assert.ok(ink > 2000, `the screenshot is nearly blank (${ink} dark pixels)`);
});
