// The package in Node.js (cpu backend; Node has no WebGPU): every shared real model against its
// expected outputs, and what happens when WebGPU is asked for where there is none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InferenceSession, Tensor, buildInfo } from '../dist/index.js';
import { checkModel } from './harness.js';
import { modelsDir, sharedModels } from './models.mjs';

const read = async (path) => new Uint8Array(await readFile(join(modelsDir, path)));

test('the module is built with SIMD128', async () => {
  const info = await buildInfo();
  assert.equal(info.simd128, true);
});

test('every shared real model on cpu in Node.js matches its expected outputs', { timeout: 20 * 60_000 }, async () => {
  const models = sharedModels();
  assert.equal(models.length, 20, 'the shared folder holds 20 real models');
  const failed = [];
  for (const model of models) {
    const result = await checkModel(read, model.name, 'cpu', model.files);
    console.log(`${result.pass ? 'ok  ' : 'FAIL'} ${model.name.padEnd(28)} run ${result.runMs.toFixed(0).padStart(6)} ms ${JSON.stringify(result.outputs.map((o) => o.maxAbs ?? o.why))}`);
    assert.equal(result.backend, 'cpu');
    if (!result.pass) failed.push(model.name);
  }
  assert.deepEqual(failed, []);
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
