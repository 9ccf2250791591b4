// Runs one shared real model through the package and compares with its expected outputs.
// Used in the browser (through test/page.html) and in Node.js; `read(path)` fetches a file's
// bytes relative to the models folder.
import { InferenceSession, readTensorProto } from '../dist/index.js';

/** The native suites' tolerances: |actual - expected| <= atol + rtol * |expected|. */
export const RTOL = 1e-3;
export const ATOL = 1e-4;
/** Same exception as tests/real_models.rs: one u8 quantization step of a re-quantized softmax. */
export const ATOL_OVERRIDES = { ppocr_mobile_cls_qdq_int8: 0.004 };

function numbers(tensor) {
  return Array.from(tensor.data, Number);
}

/** Per output: max abs error, max rel error, and whether all elements are within tolerance. */
export function compare(actual, expected, atol = ATOL, rtol = RTOL) {
  if (actual.type !== expected.type) return { pass: false, why: `type ${actual.type}, expected ${expected.type}` };
  if (actual.dims.join() !== expected.dims.join()) {
    return { pass: false, why: `dims [${actual.dims}], expected [${expected.dims}]` };
  }
  const a = numbers(actual);
  const e = numbers(expected);
  let maxAbs = 0;
  let maxRel = 0;
  let pass = true;
  for (let i = 0; i < a.length; i++) {
    const diff = Math.abs(a[i] - e[i]);
    if (!(diff <= atol + rtol * Math.abs(e[i])) && !(Number.isNaN(a[i]) && Number.isNaN(e[i]))) pass = false;
    if (diff > maxAbs) maxAbs = diff;
    const rel = diff / Math.max(Math.abs(e[i]), 1e-12);
    if (diff > atol && rel > maxRel) maxRel = rel;
  }
  return { pass, maxAbs, maxRel };
}

/**
 * Loads `models/<name>/model.onnx` on `backend`, feeds `test_data_set_0/input_K.pb`, compares
 * with `output_K.pb`. `files` lists the data set's input and output file names; `options` are
 * the session's (e.g. `numThreads`).
 */
export async function checkModel(read, name, backend, files, options = {}) {
  const started = performance.now();
  const session = await InferenceSession.create(await read(`${name}/model.onnx`), { backend, ...options });
  const loaded = performance.now();
  try {
    const feeds = {};
    for (const file of files.inputs) {
      const { name: input, tensor } = await readTensorProto(await read(`${name}/test_data_set_0/${file}`));
      feeds[input] = tensor;
    }
    const outputs = await session.run(feeds);
    const ran = performance.now();
    const atol = ATOL_OVERRIDES[name] ?? ATOL;
    const results = [];
    for (const [k, file] of files.outputs.entries()) {
      const { name: output, tensor: expected } = await readTensorProto(await read(`${name}/test_data_set_0/${file}`));
      // Expected outputs are named like the graph's; fall back to position.
      const actual = outputs[output] ?? outputs[session.outputNames[k]];
      results.push(actual ? { output, ...compare(actual, expected, atol) } : { output, pass: false, why: 'missing' });
    }
    return {
      model: name,
      backend: session.backend,
      threads: session.numThreads,
      reason: session.backendReason,
      device: session.device,
      pass: results.every((r) => r.pass),
      outputs: results,
      loadMs: loaded - started,
      runMs: ran - loaded,
    };
  } finally {
    await session.release();
  }
}
