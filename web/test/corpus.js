// The damaged-model corpus and the hostile inputs of damaged.test.mjs, run the same way in
// Node.js and in the browser (through test/page.html). Every case must end in a JS Error
// carrying the runtime's message, or run; none may trap the wasm module. `read(path)` returns a file's bytes, paths being
// `examples/…`, `models/…` (the shared real models), `node/…` (the ONNX node suite) or
// `test/corpus/…`.
import { InferenceSession, Tensor, readTensorProto, moduleStatus, WASM_TRAP } from '../dist/index.js';

/** The sessions' options: the one-threaded module, or with `useThreads(n > 1)` the threaded one. */
let sessionOptions = { backend: 'cpu', numThreads: 1 };

/** Runs what follows on the one-threaded module (1) or on the threaded one with `n` threads. */
export function useThreads(n) {
  sessionOptions = { backend: 'cpu', numThreads: n };
}

/** `{ instance, dead }` of the module the sessions run in. */
function status() {
  const all = moduleStatus();
  const { instance, dead } = sessionOptions.numThreads > 1 ? all.threaded : all;
  return { instance, dead };
}

/** The good model: loaded before the corpus and again after it, checked against its output. */
export const GOOD = {
  model: 'examples/text-orientation/model.onnx',
  input: 'examples/text-orientation/test_data_set_0/input_0.pb',
  output: 'examples/text-orientation/test_data_set_0/output_0.pb',
};

/** The real models the byte-level mutations start from (small, to keep the test short). */
export const SOURCES = [
  GOOD.model,
  'models/mtcnn_pnet/model.onnx',
  'models/light_squeezenet/model.onnx',
  'node/test_gather_0/model.onnx',
  'node/test_reshape_extended_dims/model.onnx',
  'node/test_onehot_with_axis/model.onnx',
];

export const SEED = 0x7e55e4a;

/** A small seeded PRNG (mulberry32): the same corpus on every run and in every engine. */
export function prng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  next.int = (n) => Math.floor(next() * n);
  return next;
}

/**
 * Byte-level damage of one model: truncations, byte flips (mostly where the graph's structure
 * is: the nodes come first in the file, the inputs and outputs last; the weights in between)
 * and the model's first bytes followed by random ones. `[{ name, bytes }]`.
 */
export function mutations(source, bytes, seed, { truncations = 8, flips = 16, tails = 3 } = {}) {
  const rng = prng(seed);
  const label = source.split('/').slice(-2, -1)[0];
  const out = [];
  const cuts = new Set([0, 1, bytes.length >> 1, bytes.length - 1]);
  while (cuts.size < truncations + 4) cuts.add(rng.int(bytes.length));
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    out.push({ name: `${label}/truncated@${cut}`, bytes: bytes.slice(0, cut) });
  }
  const structure = Math.min(bytes.length, 8192);
  for (let i = 0; i < flips; i++) {
    const copy = bytes.slice();
    const where = [];
    for (let k = 1 + rng.int(4); k > 0; k--) {
      const r = rng();
      const at = r < 0.6 ? rng.int(structure)
        : r < 0.8 ? bytes.length - 1 - rng.int(Math.min(bytes.length, 2048))
        : rng.int(bytes.length);
      const value = rng() < 0.5 ? copy[at] ^ (1 << rng.int(8)) : rng.int(256);
      copy[at] = value;
      where.push(`${at}=${value}`);
    }
    out.push({ name: `${label}/flipped@${where.join(',')}`, bytes: copy });
  }
  for (let i = 0; i < tails; i++) {
    const keep = rng.int(Math.min(bytes.length, 4096));
    const copy = bytes.slice(0, keep + 64 + rng.int(4096));
    for (let j = keep; j < copy.length; j++) copy[j] = rng.int(256);
    out.push({ name: `${label}/random-after@${keep}`, bytes: copy });
  }
  return out;
}

/** Buffers of random bytes (some starting like a ModelProto). */
export function randomModels(seed, count = 8) {
  const rng = prng(seed);
  const out = [];
  for (let i = 0; i < count; i++) {
    const bytes = new Uint8Array(1 + rng.int(i < 4 ? 64 : 8192));
    for (let j = 0; j < bytes.length; j++) bytes[j] = rng.int(256);
    // ir_version 8, then a graph field (7) of random length.
    if (i % 2) bytes.set([0x08, 0x08, 0x3a].slice(0, bytes.length));
    out.push({ name: `random/${i}-${bytes.length}-bytes`, bytes });
  }
  return out;
}

const TYPED = {
  float32: Float32Array, float64: Float64Array, float16: Uint16Array, int8: Int8Array,
  int16: Int16Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array,
  uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array, bool: Uint8Array,
};

/** Feeds for a loaded model: `spec` (`{ name: { type, dims, values? } }`) or from its metadata. */
function feedsFor(session, spec) {
  const feeds = {};
  const inputs = Object.keys(spec).length
    ? Object.entries(spec).map(([name, s]) => ({ name, type: s.type, shape: s.dims, values: s.values }))
    : session.inputMetadata;
  for (const { name, type, shape, values } of inputs) {
    const ctor = TYPED[type];
    if (!ctor) return { skipped: `input '${name}' has type ${type}` };
    const dims = (shape ?? [1]).map((d) => (typeof d === 'number' ? d : 1));
    const size = dims.reduce((a, b) => a * b, 1);
    if (size > 1 << 22) return { skipped: `input '${name}' would hold ${size} elements` };
    const data = new ctor(size);
    if (values) data.set(ctor === BigInt64Array ? values.map(BigInt) : values);
    else if (ctor === BigInt64Array || ctor === BigUint64Array) data.fill(1n);
    else data.fill(1);
    feeds[name] = new Tensor(type, data, dims);
  }
  return { feeds };
}

/** What a thrown value says, and whether it is what a trap gives. */
function describe(error) {
  const isError = error instanceof Error;
  return {
    outcome: error?.code === WASM_TRAP ? 'trap' : isError ? 'error' : 'not an Error',
    message: isError ? error.message : String(error),
  };
}

/**
 * Loads `bytes` on the cpu and, if that works, runs it; `{ name, outcome: 'ran' | 'error' |
 * 'trap' | 'not an Error', stage, message, instance }`. `instance` is the module instance the
 * case started in; `after` is its `{ instance, dead }` afterwards.
 */
export async function runCase(name, bytes, feedSpec = {}) {
  const instance = status().instance;
  const result = { name, instance };
  let session;
  try {
    session = await InferenceSession.create(bytes, sessionOptions);
  } catch (error) {
    Object.assign(result, { stage: 'create' }, describe(error));
    result.after = status();
    return result;
  }
  try {
    const { feeds, skipped } = feedsFor(session, feedSpec);
    if (skipped) {
      Object.assign(result, { stage: 'run', outcome: 'ran', message: `loaded; not run: ${skipped}` });
    } else {
      await session.run(feeds);
      Object.assign(result, { stage: 'run', outcome: 'ran', message: 'loaded and ran' });
    }
  } catch (error) {
    Object.assign(result, { stage: 'run' }, describe(error));
  } finally {
    await session.release().catch(() => {});
  }
  result.after = status();
  return result;
}

/** Loads the good model and checks its output; `{ instance, maxAbs, pass, session }`. */
export async function checkGood(read, session) {
  session ??= await InferenceSession.create(await read(GOOD.model), sessionOptions);
  const { name, tensor } = await readTensorProto(await read(GOOD.input));
  const { tensor: expected } = await readTensorProto(await read(GOOD.output));
  const out = (await session.run({ [name]: tensor }))[session.outputNames[0]];
  let maxAbs = 0;
  let pass = out.dims.join() === expected.dims.join();
  for (let i = 0; i < expected.data.length; i++) {
    const diff = Math.abs(out.data[i] - expected.data[i]);
    maxAbs = Math.max(maxAbs, diff);
    if (!(diff <= 1e-4 + 1e-3 * Math.abs(expected.data[i]))) pass = false;
  }
  return { instance: status().instance, dims: out.dims, maxAbs, pass, session };
}

/** Every byte-level case: mutations of SOURCES and random buffers. */
export async function byteCases(read) {
  const cases = [];
  for (const [k, source] of SOURCES.entries()) {
    cases.push(...mutations(source, await read(source), SEED + k));
  }
  cases.push(...randomModels(SEED - 1));
  return cases;
}

/** The protobuf-valid, semantically damaged models of test/corpus/semantic (make_corpus.py). */
export async function semanticCases(read) {
  const manifest = JSON.parse(new TextDecoder().decode(await read('test/corpus/semantic/manifest.json')));
  const cases = [];
  for (const { name, what, feeds } of manifest) {
    cases.push({ name: `semantic/${name}`, what, feeds, bytes: await read(`test/corpus/semantic/${name}.onnx`) });
  }
  return cases;
}

/** Runs cases one after another; `[result]` (see runCase). */
export async function runCases(cases) {
  const results = [];
  for (const c of cases) results.push({ what: c.what, ...(await runCase(c.name, c.bytes, c.feeds)) });
  return results;
}

/**
 * Hostile inputs to a good session: wrong names, dtypes, ranks and dims, and tensors whose dims,
 * type or data were changed after construction (so they reach the module unchecked by Tensor).
 * `{ [case]: { outcome, message } }`; nothing here may run.
 */
export async function badInputs(session) {
  const name = session.inputNames[0];
  const good = () => new Tensor('float32', new Float32Array(3 * 48 * 192), [1, 3, 48, 192]);
  const forged = (change) => Object.assign(good(), change);
  const cases = {
    'wrong name': () => session.run({ nope: good() }),
    'missing input': () => session.run({}),
    'extra input': () => session.run({ [name]: good(), extra: good() }),
    'wrong dtype': () => session.run({ [name]: new Tensor('int32', new Int32Array(3 * 48 * 192), [1, 3, 48, 192]) }),
    'wrong rank': () => session.run({ [name]: new Tensor('float32', new Float32Array(48 * 192), [48, 192]) }),
    'wrong fixed dim': () => session.run({ [name]: new Tensor('float32', new Float32Array(4 * 48 * 192), [1, 4, 48, 192]) }),
    'rank 64': () => session.run({ [name]: new Tensor('float32', new Float32Array(1), new Array(64).fill(1)) }),
    'Tensor dims [1e12]': async () => new Tensor('float32', new Float32Array(1), [1e12]),
    'Tensor dims [-1]': async () => new Tensor('float32', new Float32Array(1), [-1]),
    'forged dims [1e12]': () => session.run({ [name]: forged({ dims: [1e12] }) }),
    'forged dims [1e12, 3, 48, 192]': () => session.run({ [name]: forged({ dims: [1e12, 3, 48, 192] }) }),
    'forged dims [2^53, 3, 48, 192]': () => session.run({ [name]: forged({ dims: [2 ** 53, 3, 48, 192] }) }),
    'forged dims [65536, 65536, 0 data]': () => session.run({ [name]: forged({ dims: [65536, 65536, 3, 48], data: new Float32Array(0) }) }),
    'forged dims [2^32, 3, 48, 192]': () => session.run({ [name]: forged({ dims: [2 ** 32, 3, 48, 192] }) }),
    'forged dims [-1, 3, 48, 192]': () => session.run({ [name]: forged({ dims: [-1, 3, 48, 192] }) }),
    'forged dims [1.5, 3, 48, 192]': () => session.run({ [name]: forged({ dims: [1.5, 3, 48, 192] }) }),
    'forged dims [NaN, 3, 48, 192]': () => session.run({ [name]: forged({ dims: [NaN, 3, 48, 192] }) }),
    'forged dims as strings': () => session.run({ [name]: forged({ dims: ['1', '3', '48', '192'] }) }),
    'forged dims not an array': () => session.run({ [name]: forged({ dims: 27648 }) }),
    'forged data too short': () => session.run({ [name]: forged({ data: new Float32Array(7) }) }),
    'forged data a plain array': () => session.run({ [name]: forged({ data: new Array(3 * 48 * 192).fill(0) }) }),
    'forged data null': () => session.run({ [name]: forged({ data: null }) }),
    'forged dims whose element throws': () => session.run({ [name]: forged({ dims: Object.defineProperty([1, 3, 48, 192], 0, { get() { throw new Error('a getter that throws'); } }) }) }),
    'forged data whose buffer throws': () => session.run({ [name]: forged({ data: Object.defineProperty(new Float32Array(3 * 48 * 192), 'buffer', { get() { throw new Error('a getter that throws'); } }) }) }),
    'forged data posing as a typed array': () => session.run({ [name]: forged({ data: { buffer: new ArrayBuffer(8), byteOffset: 0, byteLength: 3 * 48 * 192 * 4 } }) }),
    'forged type complex64': () => session.run({ [name]: forged({ type: 'complex64' }) }),
    'forged type int64 on float data': () => session.run({ [name]: forged({ type: 'int64' }) }),
  };
  const results = {};
  for (const [what, attempt] of Object.entries(cases)) {
    try {
      await attempt();
      results[what] = { outcome: 'ran', message: '' };
    } catch (error) {
      results[what] = describe(error);
    }
  }
  return results;
}

/** Damaged TensorProto bytes for readTensorProto: each must be an Error. */
export async function badProtos(read) {
  const good = await read(GOOD.input);
  const varint = (n) => {
    const out = [];
    for (let v = BigInt.asUintN(64, BigInt(n)); ; v >>= 7n) {
      if (v < 0x80n) return [...out, Number(v)];
      out.push(Number(v & 0x7fn) | 0x80);
    }
  };
  // TensorProto { dims…; data_type float; raw_data of `bytes` bytes }
  const proto = (dims, bytes) => new Uint8Array([
    ...dims.flatMap((d) => [0x08, ...varint(d)]), 0x10, 0x01, 0x4a, ...varint(bytes), ...new Array(bytes).fill(0),
  ]);
  const cases = {
    'truncated .pb': good.slice(0, good.length >> 1),
    'random bytes': Uint8Array.from({ length: 64 }, (_, i) => (i * 97 + 13) & 255),
    'dims [65536, 65536], no data (0 elements in 32-bit arithmetic)': proto([65536, 65536], 0),
    'dims [1e12], 4 bytes': proto([1e12], 4),
    'dims [-1], 4 bytes': proto([-1], 4),
    'dims [2^32, 2^32, 2^32], 4 bytes': proto([2 ** 32, 2 ** 32, 2 ** 32], 4),
  };
  const results = {};
  for (const [what, bytes] of Object.entries(cases)) {
    try {
      await readTensorProto(bytes);
      results[what] = { outcome: 'ran', message: '' };
    } catch (error) {
      results[what] = describe(error);
    }
  }
  return results;
}

/** Batch 0 and NaN/Inf values: may run or be refused, must not trap. */
export async function edgeInputs(session) {
  const name = session.inputNames[0];
  const results = {};
  const forgedGood = (change) => Object.assign(new Tensor('float32', new Float32Array(3 * 48 * 192), [1, 3, 48, 192]), change);
  const cases = {
    'batch 0': () => session.run({ [name]: new Tensor('float32', new Float32Array(0), [0, 3, 48, 192]) }),
    'NaN and Inf values': () => session.run({ [name]: new Tensor('float32', new Float32Array(3 * 48 * 192).fill(NaN).fill(Infinity, 0, 100), [1, 3, 48, 192]) }),
    // Same byte length: the bytes are read as float32.
    'forged data of another type': () => session.run({ [name]: forgedGood({ data: new Int32Array(3 * 48 * 192) }) }),
    'batch 3': () => session.run({ [name]: new Tensor('float32', new Float32Array(3 * 3 * 48 * 192), [3, 3, 48, 192]) }),
  };
  for (const [what, attempt] of Object.entries(cases)) {
    try {
      await attempt();
      results[what] = { outcome: 'ran', message: '' };
    } catch (error) {
      results[what] = describe(error);
    }
  }
  return results;
}

/** Settles within `ms`, or rejects saying what hung. */
function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms (hung)`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const strip = ({ session, ...rest }) => rest;

/** checkGood that reports a failure instead of throwing (`{ pass: false, error }`). */
async function goodOrWhy(read, session) {
  try {
    const result = await checkGood(read, session);
    if (!session) await result.session.release();
    return strip(result);
  } catch (error) {
    return { pass: false, instance: status().instance, error: String(error?.message ?? error) };
  }
}

/**
 * The whole corpus, in order: the good model; hostile inputs to it; every damaged model, all in
 * the module instance the good model was loaded in, which must still run it correctly; then the
 * good model again, in the same session and in a new one. A serializable report.
 */
export async function runAll(read) {
  const time = {};
  let t = performance.now();
  const lap = (what) => { const now = performance.now(); time[what] = Math.round(now - t); t = now; };
  const good = await checkGood(read);
  const session = good.session;
  lap('good model');
  const bad = await badInputs(session);
  const edge = await edgeInputs(session);
  const protos = await badProtos(read);
  const goodAfterInputs = await goodOrWhy(read, session);
  lap('inputs');
  const all = [...await byteCases(read), ...await semanticCases(read)];
  const results = await runCases(all);
  lap('corpus');
  const goodAfterCorpus = await goodOrWhy(read, session);
  const goodFresh = await goodOrWhy(read);
  await session.release();
  lap('good model after');
  return {
    good: strip(good), bad: { ...bad, ...Object.fromEntries(Object.entries(protos).map(([k, v]) => [`readTensorProto: ${k}`, v])) }, edge, goodAfterInputs, results, goodAfterCorpus, goodFresh,
    status: status(), time,
  };
}

/**
 * A deliberate panic (trapForTests): the call rejects with a WASM_TRAP Error carrying the panic
 * message; a session of the dead instance rejects at once (no hang) and can be released; the
 * next create starts a fresh instance that runs the good model correctly.
 */
export async function deliberateTrap(read, trapForTests) {
  const before = await checkGood(read);
  const session = before.session;
  const report = { before: strip(before), statusBefore: status() };
  try {
    await within(5000, trapForTests('deliberate panic from the tests'), 'the trapping call');
    report.trap = { outcome: 'returned', message: '' };
  } catch (error) {
    report.trap = describe(error);
  }
  report.statusDead = status();
  const attempt = async (what, f) => {
    try {
      await within(5000, f(), what);
      return { outcome: 'ran', message: '' };
    } catch (error) {
      return describe(error);
    }
  };
  report.run = await attempt('run', () => checkGood(read, session));
  report.backend = await attempt('backend', async () => session.backend);
  report.release = await attempt('release', () => session.release());
  const after = await checkGood(read);
  await after.session.release();
  report.after = strip(after);
  report.statusAfter = status();
  return report;
}
