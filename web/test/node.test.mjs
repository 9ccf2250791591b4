// The package in Node.js (cpu backend; Node has no WebGPU): every shared real model against its
// expected outputs, on one thread and on the threaded module's pool of worker_threads, and what
// happens when WebGPU is asked for where there is none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { InferenceSession, Tensor, buildInfo, moduleStatus } from '../dist/index.js';
import { checkModel } from './harness.js';
import { modelsDir, sharedModels } from './models.mjs';

const read = async (path) => new Uint8Array(await readFile(join(modelsDir, path)));

test('the module is built with SIMD128', async () => {
  const info = await buildInfo();
  assert.equal(info.simd128, true);
});

/** Every shared model on cpu with `options`, each checked against its expected outputs; `expect(result)` asserts more. */
async function checkEveryModel(options, label, expect) {
  const models = sharedModels();
  assert.equal(models.length, 20, 'the shared folder holds 20 real models');
  const failed = [];
  for (const model of models) {
    const result = await checkModel(read, model.name, 'cpu', model.files, options);
    console.log(`${result.pass ? 'ok  ' : 'FAIL'} ${model.name.padEnd(28)} run ${result.runMs.toFixed(0).padStart(6)} ms${label} ${JSON.stringify(result.outputs.map((o) => o.maxAbs ?? o.why))}`);
    expect(result, model);
    if (!result.pass) failed.push(model.name);
  }
  assert.deepEqual(failed, []);
}

test('every shared real model on cpu in Node.js matches its expected outputs', { timeout: 20 * 60_000 }, async () => {
  await checkEveryModel({}, '', (result) => assert.equal(result.backend, 'cpu'));
});

test('webgpu where there is none is refused with the reason, never run elsewhere', async () => {
  const bytes = await read('mtcnn_rnet/model.onnx');
  await assert.rejects(
    InferenceSession.create(bytes, { backend: 'webgpu' }),
    (error) => {
      assert.ok(error instanceof Error);
      assert.match(error.message, /wgpu.*no WebGPU/);
      return true;
    },
  );
  // auto says why it did not pick WebGPU.
  const session = await InferenceSession.create(bytes, { backend: 'auto' });
  assert.equal(session.backend, 'cpu');
  assert.match(session.backendReason, /^auto picked cpu: .*no WebGPU/);
  await session.release();
});

test('every shared real model on the threaded module in Node.js (2 worker_threads) matches its expected outputs', { timeout: 20 * 60_000 }, async () => {
  await checkEveryModel({ numThreads: 2 }, ', 2 threads', (result, model) => {
    assert.equal(result.threads, 2, `${model.name}: ${result.reason}`);
    assert.equal(result.reason, 'cpu requested; 2 threads (wasm threads)');
  });
  assert.equal(moduleStatus().threaded.threads, 2);
});

test('a Node.js process whose sessions use the pool exits when its work is done', () => {
  // The pool's workers must not keep the process alive, and a run in flight must (the script's
  // last await is the run).
  const script = `
    import { readFile } from 'node:fs/promises';
    import { InferenceSession, Tensor } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
    const bytes = new Uint8Array(await readFile(${JSON.stringify(join(modelsDir, 'mtcnn_rnet/model.onnx'))}));
    const session = await InferenceSession.create(bytes, { backend: 'cpu', numThreads: 2 });
    const out = await session.run({ input_2: new Tensor('float32', new Float32Array(24 * 24 * 3), [1, 24, 24, 3]) });
    console.log(session.numThreads, Object.keys(out).sort().join(','));`;
  const dir = mkdtempSync(join(tmpdir(), 'tessera-'));
  const file = join(dir, 'pool-exits.mjs');
  writeFileSync(file, script);
  // Run as a plain script, not as a child of the test runner.
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const child = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 120_000, env });
  rmSync(dir, { recursive: true });
  assert.equal(child.error, undefined, `the process did not exit: ${child.error}`);
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout.trim(), '2 dense_2,softmax_1');
});

test('numThreads above the cores runs on the cores and says so', async () => {
  const cores = availableParallelism();
  const warned = [];
  const warn = console.warn;
  console.warn = (...args) => warned.push(args.join(' '));
  try {
    const session = await InferenceSession.create(join(modelsDir, 'mtcnn_rnet/model.onnx'), { backend: 'cpu', numThreads: cores + 2 });
    const capped = `${cores + 2} threads asked, ${cores} cores? here \\(os\\.availableParallelism\\(\\)\\)`;
    assert.equal(session.numThreads, cores);
    assert.match(session.backendReason, new RegExp(capped));
    assert.ok(warned.some((m) => new RegExp(`^tessera-web: ${capped}`).test(m)), `console warnings: ${warned}`);
    const input = new Tensor('float32', new Float32Array(24 * 24 * 3), [1, 24, 24, 3]);
    const out = await session.run({ [session.inputNames[0]]: input });
    assert.ok(Object.keys(out).length > 0);
    await session.release();
  } finally {
    console.warn = warn;
  }
});

test('onnxruntime-web style options and metadata', async () => {
  const session = await InferenceSession.create(join(modelsDir, 'minilm_l3_paraphrase/model.onnx'), { executionProviders: ['wasm'] });
  assert.equal(session.backend, 'cpu');
  assert.deepEqual(session.inputNames, ['input_ids', 'attention_mask']);
  assert.deepEqual(session.inputMetadata[0], { name: 'input_ids', type: 'int64', shape: ['batch_size', 'sequence_length'], isTensor: true });
  const ids = new Tensor('int64', [101, 7592, 2088, 102], [1, 4]);
  const mask = new Tensor('int64', new BigInt64Array(4).fill(1n), [1, 4]);
  const out = await session.run({ input_ids: ids, attention_mask: mask }, ['461']);
  assert.deepEqual(Object.keys(out), ['461']);
  assert.equal(out['461'].type, 'float32');
  assert.deepEqual(out['461'].dims, [1, 384]);
  await session.release();
});

test('profile says where a cpu run spends its time, op by op', async () => {
  const session = await InferenceSession.create(join(modelsDir, 'mtcnn_rnet/model.onnx'), { backend: 'cpu' });
  const input = new Tensor('float32', new Float32Array(24 * 24 * 3).fill(0.5), [1, 24, 24, 3]);
  const profile = await session.profile({ [session.inputNames[0]]: input }, { runs: 3 });
  assert.equal(profile.runs, 3);
  assert.match(profile.method, /^cpu: /);
  const ops = profile.perOp.map((o) => o.op);
  // rnet is three convolutions (im2col + matrix product in tract's plan), pools, PRelus and
  // dense layers: their ops are timed.
  for (const op of ['Im2col', 'OptMatMul', 'FastMaxPool', 'FastBinChain(PRelu)']) assert.ok(ops.includes(op), `${op} among ${ops}`);
  assert.ok(profile.perOp.every((o) => o.msPerRun >= 0 && o.nodes >= 1));
  assert.equal(profile.perOp.reduce((n, o) => n + o.nodes, 0), profile.perNode.length);
  for (let i = 1; i < profile.perOp.length; i++) assert.ok(profile.perOp[i - 1].msPerRun >= profile.perOp[i].msPerRun, 'slowest first');
  await assert.rejects(session.profile({ [session.inputNames[0]]: input }, { runs: 0 }), RangeError);
  await assert.rejects(session.profile({ wrong: input }), /input/);
  // The session still runs after a refused profile.
  const out = await session.run({ [session.inputNames[0]]: input });
  assert.equal(Object.keys(out).length, 2);
  await session.release();
});

test('placement on cpu: every step on the cpu, nothing copied', async () => {
  const session = await InferenceSession.create(join(modelsDir, 'mtcnn_rnet/model.onnx'), { backend: 'cpu' });
  const input = new Tensor('float32', new Float32Array(24 * 24 * 3), [1, 24, 24, 3]);
  const placement = await session.placement({ [session.inputNames[0]]: input });
  assert.equal(placement.backend, 'cpu');
  assert.equal(placement.device, undefined);
  assert.ok(placement.steps.length >= 5, JSON.stringify(placement.steps));
  assert.ok(placement.steps.every((s) => s.runsOn === 'cpu' && s.why === undefined && s.outputs.length >= 1));
  assert.ok(placement.steps.some((s) => /f32\[1, /.test(s.outputs[0])), 'outputs carry dtype and shape');
  assert.deepEqual(placement.copies, []);
  await assert.rejects(session.placement({ nope: input }), /input/);
  await session.release();
});

test("preferredOutputLocation 'gpu-buffer' on the cpu backend: outputs are on the cpu, and say so", async () => {
  await assert.rejects(InferenceSession.create(join(modelsDir, 'mtcnn_rnet/model.onnx'), { preferredOutputLocation: 'gpu' }), TypeError);
  const session = await InferenceSession.create(join(modelsDir, 'mtcnn_rnet/model.onnx'), { backend: 'cpu', preferredOutputLocation: 'gpu-buffer' });
  const input = new Tensor('float32', new Float32Array(24 * 24 * 3), [1, 24, 24, 3]);
  const out = await session.run({ [session.inputNames[0]]: input });
  for (const tensor of Object.values(out)) {
    assert.equal(tensor.location, 'cpu');
    assert.equal(await tensor.getData(), tensor.data);
  }
  assert.equal(session.lastTransfers, undefined);
  await session.release();
});
