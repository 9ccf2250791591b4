// Tessera for browsers and Node.js: run one ONNX file on WebGPU or on the cpu (wasm SIMD).
// The API follows onnxruntime-web (InferenceSession, Tensor) so its users switch by changing
// the import. The work is done by the Rust module in ./wasm/ (crates/tessera-wasm).

import init, { WasmSession, readTensorProto as readProto, buildInfo as wasmBuildInfo } from './wasm/tessera_wasm.js';

let initialised;

const isNode = typeof process !== 'undefined' && !!process.versions?.node;

/** Loads and instantiates the wasm module once (in Node.js from the file beside this one). */
function ensureInit() {
  initialised ??= (async () => {
    const url = new URL('./wasm/tessera_wasm_bg.wasm', import.meta.url);
    if (isNode && url.protocol === 'file:') {
      const { readFile } = await import('node:fs/promises');
      await init({ module_or_path: await readFile(url) });
    } else {
      await init({ module_or_path: url });
    }
  })();
  return initialised;
}

const TYPED_ARRAYS = {
  float32: Float32Array,
  float64: Float64Array,
  float16: Uint16Array,
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
  bool: Uint8Array,
};

function typeOf(data) {
  for (const [type, ctor] of Object.entries(TYPED_ARRAYS)) {
    if (data instanceof ctor) return type;
  }
  throw new TypeError('cannot infer the tensor type: pass it, e.g. new Tensor("float32", data, dims)');
}

/** A tensor on the host: `type` (onnxruntime-web's names), `data` (a typed array), `dims`. */
export class Tensor {
  /**
   * `new Tensor(type, data, dims)` or `new Tensor(data, dims)` (type from the typed array).
   * Plain arrays are converted (numbers or bigints for int64, booleans for bool).
   */
  constructor(typeOrData, dataOrDims, maybeDims) {
    let type, data, dims;
    if (typeof typeOrData === 'string') {
      [type, data, dims] = [typeOrData, dataOrDims, maybeDims];
    } else {
      [type, data, dims] = [typeOf(typeOrData), typeOrData, dataOrDims];
    }
    const ctor = TYPED_ARRAYS[type];
    if (!ctor) throw new TypeError(`unsupported tensor type '${type}' (expected one of ${Object.keys(TYPED_ARRAYS).join(', ')})`);
    if (Array.isArray(data)) {
      data = type === 'int64' || type === 'uint64'
        ? ctor.from(data, (v) => BigInt(v))
        : type === 'bool' ? ctor.from(data, (v) => (v ? 1 : 0)) : ctor.from(data);
    }
    if (!(data instanceof ctor)) throw new TypeError(`a ${type} tensor's data must be a ${ctor.name} or an array`);
    dims = dims ?? [data.length];
    if (!Array.isArray(dims) || dims.some((d) => !Number.isInteger(d) || d < 0)) {
      throw new TypeError(`dims must be an array of non-negative integers, got ${JSON.stringify(dims)}`);
    }
    const size = dims.reduce((a, b) => a * b, 1);
    if (size !== data.length) {
      throw new RangeError(`dims [${dims}] hold ${size} elements but data has ${data.length}`);
    }
    this.type = type;
    this.data = data;
    this.dims = dims;
    this.size = size;
  }
}

function fromWasm(raw) {
  return new Tensor(raw.type, raw.data, raw.dims);
}

/** A model bound to a backend: `await InferenceSession.create(model, { backend })`. */
export class InferenceSession {
  #inner;
  #queue = Promise.resolve();
  #metadata;

  constructor(inner) {
    this.#inner = inner;
    this.#metadata = JSON.parse(inner.metadata());
  }

  /**
   * Loads a model (a URL or path, or its bytes) onto a backend.
   * options.backend: 'auto' (default; WebGPU when a hardware adapter exists, else cpu),
   * 'webgpu', or 'cpu' ('wasm' too). onnxruntime-web's `executionProviders: ['webgpu']` works.
   * options.allowFallback: on WebGPU, run the ops it lacks on the cpu (each copy reported)
   * instead of refusing the model.
   */
  static async create(model, options = {}) {
    await ensureInit();
    const backend = options.backend ?? providerName(options.executionProviders?.[0]) ?? 'auto';
    const bytes = await modelBytes(model);
    const inner = await WasmSession.create(bytes, backend, !!options.allowFallback);
    return new InferenceSession(inner);
  }

  /** The backend running this session: 'webgpu' or 'cpu'. */
  get backend() { return this.#inner.backend; }
  /** Why this backend was chosen (with 'auto': what was skipped, and why). */
  get backendReason() { return this.#inner.backendReason; }
  /** The WebGPU adapter, when on WebGPU. */
  get device() { return this.#inner.device; }
  get inputNames() { return this.#metadata.inputs.map((i) => i.name); }
  get outputNames() { return this.#metadata.outputs.map((o) => o.name); }
  /** `[{ name, type, shape }]`; a shape holds numbers, symbolic names, or null when unknown. */
  get inputMetadata() { return this.#metadata.inputs.map(io); }
  get outputMetadata() { return this.#metadata.outputs.map(io); }

  /**
   * Runs the model: `feeds` maps input names to Tensors; resolves to `{ outputName: Tensor }`
   * (only `fetches` when given, a list of output names). Runs on one session are queued.
   */
  run(feeds, fetches) {
    const result = this.#queue.then(() => this.#run(feeds, fetches));
    this.#queue = result.catch(() => {});
    return result;
  }

  async #run(feeds, fetches) {
    if (!this.#inner) throw new Error('this session was released');
    if (feeds === null || typeof feeds !== 'object') throw new TypeError('feeds must be an object of { inputName: Tensor }');
    const list = Object.entries(feeds).map(([name, t]) => {
      if (!(t instanceof Tensor)) throw new TypeError(`feed '${name}' is not a Tensor`);
      return { name, type: t.type, dims: t.dims, data: t.data };
    });
    if (fetches) {
      for (const name of fetches) {
        if (!this.outputNames.includes(name)) throw new Error(`unknown output '${name}' (outputs: ${this.outputNames.join(', ')})`);
      }
    }
    const outputs = await this.#inner.run(list);
    const result = {};
    for (const raw of outputs) {
      if (!fetches || fetches.includes(raw.name)) result[raw.name] = fromWasm(raw);
    }
    return result;
  }

  /** Frees the session's memory (wasm and GPU). */
  async release() {
    await this.#queue;
    this.#inner?.free();
    this.#inner = undefined;
  }
}

function io({ name, type, dims }) {
  return { name, type, shape: dims, isTensor: true };
}

function providerName(provider) {
  const name = typeof provider === 'string' ? provider : provider?.name;
  return name === 'wasm' ? 'cpu' : name;
}

async function modelBytes(model) {
  if (model instanceof Uint8Array) return model;
  if (model instanceof ArrayBuffer) return new Uint8Array(model);
  if (ArrayBuffer.isView(model)) return new Uint8Array(model.buffer, model.byteOffset, model.byteLength);
  if (typeof model === 'string' || model instanceof URL) {
    const url = model instanceof URL ? model : URL.canParse?.(model) ? new URL(model) : undefined;
    if (isNode && (!url || url.protocol === 'file:')) {
      const { readFile } = await import('node:fs/promises');
      return new Uint8Array(await readFile(url ?? model));
    }
    const response = await fetch(model);
    if (!response.ok) throw new Error(`fetching the model ${model}: HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  }
  throw new TypeError('the model must be a URL, a path, or its bytes (Uint8Array or ArrayBuffer)');
}

/** Reads a serialized ONNX TensorProto (the .pb files of ONNX test data) into a Tensor. */
export async function readTensorProto(bytes) {
  await ensureInit();
  const raw = readProto(await modelBytes(bytes));
  return { name: raw.name, tensor: fromWasm(raw) };
}

/** This build: version, SIMD128, backends. */
export async function buildInfo() {
  await ensureInit();
  return JSON.parse(wasmBuildInfo());
}
