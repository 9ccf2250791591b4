// Tessera for browsers and Node.js: run one ONNX file on WebGPU or on the cpu (wasm SIMD).
// The API follows onnxruntime-web (InferenceSession, Tensor) so its users switch by changing
// the import. The work is done by the Rust module (crates/tessera-wasm), built twice: ./wasm/
// (cpu on one thread, and WebGPU) and ./wasm-threads/ (the cpu on a pool of workers sharing its
// memory: Web Workers on a cross-origin isolated page, worker_threads in Node.js).

import * as firstGlue from './wasm/tessera_wasm.js';

const isNode = typeof process !== 'undefined' && !!process.versions?.node;

/**
 * Settings, as onnxruntime-web's `env`: `env.wasm.numThreads` is the thread count of cpu sessions
 * (a session's own `numThreads` option wins); unset or 0: one thread. Not the cores by default:
 * in Chromium's default tiering, pooled runs of tract's matrix products were measured slower
 * than one thread on most of the shared models (docs/web.md), so threads are asked for.
 */
export const env = { wasm: { numThreads: undefined } };

/** The two builds of the module: folder and whether it runs the cpu on a pool of workers. */
const MODULES = {
  single: { dir: 'wasm', threaded: false },
  threaded: { dir: 'wasm-threads', threaded: true },
};

// A Rust panic inside the module aborts: the instance traps (WebAssembly.RuntimeError) and its
// memory and state are left half-updated, so nothing may call into it again. Each instance is
// tracked here: the module's panic listener and every call's exceptions mark it dead, calls on
// a dead instance fail at once with the reason, promises pending on it reject, and the next
// create (or readTensorProto) starts a fresh instance.

/** The error code of an Error caused by the module trapping. */
export const WASM_TRAP = 'TESSERA_WASM_TRAP';

const current = { single: undefined, threaded: undefined };
/** Instances started so far, per kind of module. */
const started = { single: 0, threaded: 0 };

class Instance {
  /** `threads`: the pool's workers (threaded module), started with the instance. */
  constructor(number, kind, threads) {
    this.number = number;
    this.kind = kind;
    this.threads = threads;
    this.dead = null;
    this.died = new Promise((_, reject) => { this.kill = reject; });
    this.died.catch(() => {});
    this.ready = this.#load();
  }

  async #load() {
    // Every instance needs its own copy of the wasm-bindgen glue (it holds the instance in
    // module state); the first is the static import, later ones are imported afresh (the pool's
    // workers import the same URL, so they join this instance's memory).
    const { dir } = MODULES[this.kind];
    this.glue = this.number === 1 && this.kind === 'single'
      ? firstGlue
      : await import(new URL(`./${dir}/tessera_wasm.js?instance=${this.number}`, import.meta.url).href);
    await this.glue.default({ module_or_path: await compiledModule(this.kind) });
    this.glue.onPanic((message) => this.markDead(message));
    if (MODULES[this.kind].threaded) await this.glue.initThreadPool(this.threads);
    return this;
  }

  /** Marks the instance dead (the first reason wins) and rejects what is pending on it. */
  markDead(reason) {
    if (this.dead) return;
    this.dead = String(reason).trim();
    this.kill(this.error());
  }

  /** The Error for anything that hits this instance once dead. */
  error(cause) {
    const error = new Error(
      `tessera's wasm module trapped: ${this.dead}\n(a bug in tessera: please report it with the model and inputs.` +
      ' Every session of that module instance is unusable; InferenceSession.create starts a fresh one.)',
      cause ? { cause } : undefined,
    );
    error.code = WASM_TRAP;
    return error;
  }

  /** Calls into the module; a trap during the call kills the instance and is reported. */
  call(f) {
    if (this.dead) throw this.error();
    try {
      return f(this.glue);
    } catch (error) {
      // Errors the runtime returns are plain Errors; a trap is a RuntimeError, and running out
      // of JS stack inside wasm a RangeError: either leaves the instance in an unknown state.
      if (this.dead || error instanceof WebAssembly.RuntimeError || error instanceof RangeError) {
        this.markDead(this.dead ?? `${error.name}: ${error.message}`);
        throw this.error(error);
      }
      throw error;
    }
  }

  /** `call` for a call that returns a promise: it also rejects if the instance dies meanwhile. */
  async callAsync(f) {
    const promise = this.call(f);
    // In Node.js a pool worker's answer arrives through Atomics.waitAsync, which does not keep
    // the process alive, and the workers are unreferenced: a timer does, while the call lasts.
    const keepAlive = isNode && MODULES[this.kind].threaded ? setInterval(() => {}, 2 ** 30) : undefined;
    try {
      return await Promise.race([promise, this.died]);
    } finally {
      clearInterval(keepAlive);
    }
  }
}

const compiled = {};

/**
 * Node.js 20's V8 (11.3) runs the threaded module's pool wrongly in Liftoff, its baseline wasm
 * compiler: the pool's workers never take the jobs rayon sends them, and the pool hangs as it
 * starts (measured; with --no-liftoff, or in Chromium 156, it runs). So before that module
 * compiles, Liftoff is turned off for the process (V8's flags are per process): its wasm then
 * compiles with the optimizing tier only. Newer Node.js versions were not checked.
 */
async function withoutLiftoff() {
  const v8 = await import('node:v8');
  v8.setFlagsFromString('--no-liftoff');
}

/** The compiled module of a kind (in Node.js from the file beside this one), compiled once for all instances. */
function compiledModule(kind) {
  compiled[kind] ??= (async () => {
    const url = new URL(`./${MODULES[kind].dir}/tessera_wasm_bg.wasm`, import.meta.url);
    if (isNode && url.protocol === 'file:') {
      const { readFile } = await import('node:fs/promises');
      if (MODULES[kind].threaded) await withoutLiftoff();
      return WebAssembly.compile(await readFile(url));
    }
    const response = await fetch(url);
    if (!response.ok) throw new Error(`fetching ${url}: HTTP ${response.status}`);
    if (typeof WebAssembly.compileStreaming === 'function'
        && response.headers.get('Content-Type')?.startsWith('application/wasm')) {
      return WebAssembly.compileStreaming(response);
    }
    return WebAssembly.compile(await response.arrayBuffer());
  })();
  compiled[kind].catch(() => { compiled[kind] = undefined; });
  return compiled[kind];
}

/**
 * The live instance of a kind of module, started (or restarted after a trap) when needed; the
 * threaded one with a pool of `threads` workers (an instance's pool keeps its size).
 */
function ensureInit(kind = 'single', threads = 1) {
  if (!current[kind] || current[kind].dead) current[kind] = new Instance(++started[kind], kind, threads);
  const instance = current[kind];
  return instance.ready.catch((error) => {
    if (current[kind] === instance) current[kind] = undefined;
    throw error;
  });
}

/**
 * Which module instances the package uses and whether they are alive: `{ instance, dead }` for
 * the one-threaded module (`dead` is the trap's reason, or null) and the same, with its pool's
 * `threads`, as `threaded` (instance 0: not started). Each kind's instances are numbered from
 * 1; a new one starts after a trap.
 */
export function moduleStatus() {
  const { single, threaded } = current;
  return {
    instance: single?.number ?? 0,
    dead: single?.dead ?? null,
    threaded: { instance: threaded?.number ?? 0, dead: threaded?.dead ?? null, threads: threaded?.threads ?? 0 },
  };
}

let warnedNotIsolated = false;
let warnedCapped = false;

/**
 * Which module runs a session on `backend` with `options`, and on how many threads: `{ kind,
 * threads, why }`. Threads need the threaded module, which needs SharedArrayBuffer: Node.js has
 * it, a page only when cross-origin isolated; where that is missing the session runs on one
 * thread and the console says why, once.
 */
function threading(backend, options, cores) {
  const asked = options.numThreads ?? env.wasm.numThreads ?? 0;
  if (!Number.isInteger(asked) || asked < 0) {
    throw new TypeError(`numThreads must be a non-negative integer (0: the default), got ${JSON.stringify(asked)}`);
  }
  if (backend === 'webgpu' || backend === 'wgpu' || asked <= 1) return { kind: 'single', threads: 1, why: '' };
  // No more workers than cores: a run's idle workers spin while it lasts (as onnxruntime's do)
  // and a Web Worker cannot yield its core, so extra workers only take cores from those working
  // (4 threads on 2 cores: MTCNN's RNet 2.9 ms a run against 0.4 on 2, silero 3.2 against 0.6;
  // docs/web.md).
  const capped = cores > 0 && asked > cores
    ? `${asked} threads asked, ${cores} core${cores === 1 ? '' : 's'} here (${isNode ? 'os.availableParallelism()' : 'navigator.hardwareConcurrency'})`
    : '';
  const wanted = capped ? cores : asked;
  if (capped) {
    if (!warnedCapped) {
      warnedCapped = true;
      console.warn(`tessera-web: ${capped}: the cpu backend runs on ${cores} thread${cores === 1 ? '' : 's'}; more would only contend for the cores.`);
    }
    if (wanted === 1) return { kind: 'single', threads: 1, why: capped };
  }
  // Node.js shares memory between worker_threads without isolation.
  if (!isNode && !globalThis.crossOriginIsolated) {
    const why = 'the page is not cross-origin isolated, so wasm threads are off';
    if (!warnedNotIsolated) {
      warnedNotIsolated = true;
      console.warn(`tessera-web: ${why}: the cpu backend runs on 1 thread instead of ${wanted}. Serve the page with ` +
        "'Cross-Origin-Opener-Policy: same-origin' and 'Cross-Origin-Embedder-Policy: require-corp' to use threads.");
    }
    return { kind: 'single', threads: 1, why };
  }
  return { kind: 'threaded', threads: wanted, why: capped };
}

/** The machine's logical cores as the runtime reports them; 0 where it does not say. */
async function coreCount() {
  if (isNode) return (await import('node:os')).availableParallelism();
  return globalThis.navigator?.hardwareConcurrency ?? 0;
}

/**
 * Makes the module panic (and so trap), to test how the package copes; with `afterAwait`, in the
 * futures queue after the call returned, as a panic while waiting for WebGPU would. Not part of
 * the API.
 */
export async function trapForTests(message = 'trap for tests', { afterAwait = false } = {}) {
  const instance = await ensureInit();
  await instance.callAsync((glue) => glue.panicForTests(message, afterAwait, false));
}

/**
 * `trapForTests` in the threaded module: a panic on the page's thread during the call, or with
 * `onWorker` on a worker of its pool, as during a run. Not part of the API.
 */
export async function trapThreadedForTests(message = 'trap for tests', { threads = 2, onWorker = false } = {}) {
  const instance = await ensureInit('threaded', threads);
  await instance.callAsync((glue) => glue.panicForTests(message, false, onWorker));
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
    /** 'cpu' (its `data` is here) or 'gpu-buffer' (in WebGPU memory: `await getData()`). */
    this.location = 'cpu';
  }

  /** The elements (on the GPU: downloaded, once). */
  async getData() {
    return this.data;
  }

  /** Frees GPU memory at once (GPU tensors; nothing to do for cpu ones). */
  dispose() {}
}

function fromWasm(raw) {
  return new Tensor(raw.type, raw.data, raw.dims);
}

/**
 * A run's output kept in WebGPU memory (`preferredOutputLocation: 'gpu-buffer'`): feed it to a
 * later run without a round trip through JS, or download it with `getData()`.
 */
class GpuTensor extends Tensor {
  #handle;
  #instance;
  #downloaded;

  constructor(handle, instance) {
    const dims = Array.from(instance.call(() => handle.dims()));
    const type = instance.call(() => handle.typeName());
    // An empty stand-in of the right type: the elements stay on the GPU.
    super(type, new TYPED_ARRAYS[type](0), [0]);
    const size = dims.reduce((a, b) => a * b, 1);
    Object.assign(this, { dims, size, location: 'gpu-buffer' });
    this.#handle = handle;
    this.#instance = instance;
  }

  get data() {
    throw new Error('this tensor is in WebGPU memory (location "gpu-buffer"): await tensor.getData() to download it');
  }

  set data(_) {}

  async getData() {
    if (!this.#handle) throw new Error('this GPU tensor was disposed');
    this.#downloaded ??= this.#instance.callAsync(() => this.#handle.download()).then((raw) => raw.data);
    return this.#downloaded;
  }

  dispose() {
    if (this.#handle && !this.#instance.dead) this.#instance.call(() => this.#handle.free());
    this.#handle = undefined;
  }

  /** A handle for one run of a session in `instance` (each run's feeds take their own). */
  handleFor(instance, name) {
    if (!this.#handle) throw new Error(`feed '${name}' is a disposed GPU tensor`);
    if (instance !== this.#instance) {
      throw new Error(`feed '${name}' is in the GPU memory of a module instance that trapped: it is gone`);
    }
    return instance.call(() => this.#handle.share());
  }
}

/** A model bound to a backend: `await InferenceSession.create(model, { backend })`. */
export class InferenceSession {
  #inner;
  #instance;
  #queue = Promise.resolve();
  #metadata;

  #outputsOnGpu;
  #threads;
  #reason;

  constructor(inner, instance, outputsOnGpu, threads = 1, reason = undefined) {
    this.#inner = inner;
    this.#instance = instance;
    this.#metadata = JSON.parse(instance.call(() => inner.metadata()));
    this.#outputsOnGpu = outputsOnGpu && this.backend === 'webgpu';
    this.#threads = threads;
    this.#reason = reason;
  }

  /**
   * Loads a model (a URL or path, or its bytes) onto a backend.
   * options.backend: 'auto' (default; WebGPU when a hardware adapter exists, else cpu),
   * 'webgpu', or 'cpu' ('wasm' too). onnxruntime-web's `executionProviders: ['webgpu']` works.
   * options.allowFallback: on WebGPU, run the ops it lacks on the cpu (each copy reported)
   * instead of refusing the model.
   * options.preferredOutputLocation: 'cpu' (default) or 'gpu-buffer': on WebGPU, outputs stay in
   * GPU memory (Tensors with location 'gpu-buffer') to feed later runs without a copy; on the
   * cpu backend outputs are on the cpu whatever this says (their `location` tells).
   * options.numThreads: the cpu's threads (default `env.wasm.numThreads`, else 1). More than one
   * runs the threaded module, in Node.js and on a cross-origin isolated page (on other pages one
   * thread, with a console warning); `session.numThreads` and `session.backendReason` say what
   * was used and why.
   */
  static async create(model, options = {}) {
    const backend = options.backend ?? providerName(options.executionProviders?.[0]) ?? 'auto';
    const location = options.preferredOutputLocation ?? 'cpu';
    if (location !== 'cpu' && location !== 'gpu-buffer') {
      throw new TypeError(`preferredOutputLocation must be 'cpu' or 'gpu-buffer', got ${JSON.stringify(location)}`);
    }
    const threads = threading(backend, options, await coreCount());
    const bytes = await modelBytes(model);
    const fallback = !!options.allowFallback;
    const onGpu = location === 'gpu-buffer';
    let autoReason;
    if (threads.kind === 'single' || (backend === 'auto' && globalThis.navigator?.gpu)) {
      // 'auto' may pick WebGPU, which only the one-threaded module has: it decides first.
      const instance = await ensureInit();
      const inner = await instance.callAsync((glue) => glue.WasmSession.create(bytes, backend, fallback, undefined));
      const session = new InferenceSession(inner, instance, onGpu);
      if (session.backend === 'webgpu') return session;
      if (threads.kind === 'single') {
        if (threads.why) session.#reason = `${session.backendReason}; 1 thread: ${threads.why}`;
        return session;
      }
      autoReason = session.backendReason;
      await session.release();
    }
    const instance = await ensureInit('threaded', threads.threads);
    const inner = await instance.callAsync((glue) => glue.WasmSession.create(bytes, 'cpu', fallback, threads.threads));
    const used = Math.min(threads.threads, instance.threads);
    const pool = used < threads.threads ? ` (${threads.threads} asked; the pool started with ${instance.threads})` : '';
    const capped = threads.why ? ` (${threads.why})` : '';
    const reason = `${autoReason ?? instance.call(() => inner.backendReason)}; ${used} threads (wasm threads)${capped}${pool}`;
    return new InferenceSession(inner, instance, onGpu, used, reason);
  }

  /** The backend running this session: 'webgpu' or 'cpu'. */
  get backend() { return this.#get('backend'); }
  /** Why this backend was chosen (with 'auto': what was skipped, and why), and the cpu's threads. */
  get backendReason() {
    const reason = this.#get('backendReason');
    return this.#reason ?? reason;
  }
  /** The threads a cpu run may use (1 on WebGPU and in the one-threaded module). */
  get numThreads() { return this.#threads; }
  /** The WebGPU adapter, when on WebGPU. */
  get device() { return this.#get('device'); }

  #get(property) {
    if (!this.#inner) throw new Error('this session was released');
    return this.#instance.call(() => this.#inner[property]);
  }
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
    return this.#queued(() => this.#run(feeds, fetches));
  }

  /** `work` after every call queued before it on this session (one at a time, as the module wants). */
  #queued(work) {
    const result = this.#queue.then(work);
    this.#queue = result.catch(() => {});
    return result;
  }

  #feedList(feeds) {
    if (!this.#inner) throw new Error('this session was released');
    if (feeds === null || typeof feeds !== 'object') throw new TypeError('feeds must be an object of { inputName: Tensor }');
    return Object.entries(feeds).map(([name, t]) => {
      if (!(t instanceof Tensor)) throw new TypeError(`feed '${name}' is not a Tensor`);
      if (t instanceof GpuTensor) {
        throw new Error(`feed '${name}' is in WebGPU memory; only run() takes GPU tensors (download it with await tensor.getData())`);
      }
      return { name, type: t.type, dims: t.dims, data: t.data };
    });
  }

  async #run(feeds, fetches) {
    if (!this.#inner) throw new Error('this session was released');
    if (feeds === null || typeof feeds !== 'object') throw new TypeError('feeds must be an object of { inputName: Tensor }');
    if (fetches) {
      for (const name of fetches) {
        if (!this.outputNames.includes(name)) throw new Error(`unknown output '${name}' (outputs: ${this.outputNames.join(', ')})`);
      }
    }
    const onGpu = Object.entries(feeds).filter(([, t]) => t instanceof GpuTensor);
    if (onGpu.length && this.backend !== 'webgpu') {
      throw new Error(`feed '${onGpu[0][0]}' is in WebGPU memory and this session runs on the cpu: download it first (await tensor.getData()); Tessera does not copy it for you`);
    }
    const list = this.#feedList(Object.fromEntries(Object.entries(feeds).filter(([, t]) => !(t instanceof GpuTensor))));
    let outputs;
    if (onGpu.length || this.#outputsOnGpu) {
      const handles = onGpu.map(([name, t]) => t.handleFor(this.#instance, name));
      outputs = await this.#instance.callAsync(() => this.#inner.runOnDevice(list, onGpu.map(([name]) => name), handles, this.#outputsOnGpu));
    } else {
      outputs = await this.#instance.callAsync(() => this.#inner.run(list));
    }
    const result = {};
    for (const raw of outputs) {
      const wanted = !fetches || fetches.includes(raw.name);
      if (raw.device) {
        // Outputs not fetched free their GPU memory at once.
        if (wanted) result[raw.name] = new GpuTensor(raw.device, this.#instance);
        else this.#instance.call(() => raw.device.free());
      } else if (wanted) {
        result[raw.name] = fromWasm(raw);
      }
    }
    return result;
  }

  /**
   * Bytes the last run copied between the cpu and the GPU: `{ inputBytes, outputBytes,
   * fallbackBytes, countBytes }` (fallback: steps WebGPU lacks, with allowFallback; count: the
   * counts a model whose shapes depend on values reads back between its stages); undefined on
   * the cpu.
   */
  get lastTransfers() {
    const json = this.#get('lastTransfers');
    if (json === undefined) return undefined;
    const t = JSON.parse(json);
    return {
      inputBytes: t.input_bytes,
      outputBytes: t.output_bytes,
      fallbackBytes: t.fallback_bytes,
      countBytes: t.count_bytes,
    };
  }

  /**
   * Where a run's time goes (cpu backend): runs on `feeds` `options.runs` times (default 10),
   * timing every node; resolves to `{ method, runs, perOp: [{ op, msPerRun, nodes }],
   * perNode: [{ node, op, msPerRun }] }`, slowest first. Queued like `run`.
   */
  profile(feeds, options = {}) {
    return this.#queued(async () => {
      const list = this.#feedList(feeds);
      const runs = options.runs ?? 10;
      if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`runs must be a positive integer, got ${runs}`);
      const json = await this.#instance.callAsync(() => this.#inner.profile(list, runs));
      const raw = JSON.parse(json);
      return {
        method: raw.method,
        runs: raw.runs,
        perOp: raw.per_op.map((o) => ({ op: o.op, msPerRun: o.ms_per_run, nodes: o.nodes })),
        perNode: raw.per_node.map((n) => ({ node: n.node, op: n.op, msPerRun: n.ms_per_run })),
      };
    });
  }

  /**
   * Where each step runs for these feeds and what a run copies between the cpu and the GPU,
   * without running: `{ backend, device, steps: [{ node, op, runsOn, why, outputs }],
   * copies: [{ value, bytes, direction: 'toDevice' | 'toHost', beforeStep, cause: 'inputOutput' |
   * 'fallback' | 'count' }] }`. `runsOn` is 'webgpu' or 'cpu'; `why` says why a step left WebGPU.
   * A model whose shapes depend on values (NonZero, NonMaxSuppression) runs in stages, each
   * planned for counts only a run gives: its placement needs a run, which the browser's
   * single thread cannot wait for, so it is refused there with the reason.
   */
  placement(feeds) {
    return this.#queued(() => {
      const list = this.#feedList(feeds);
      const raw = JSON.parse(this.#instance.call(() => this.#inner.placement(list)));
      const device = (name) => (name === 'wgpu' ? 'webgpu' : name === 'host' ? 'cpu' : name);
      return {
        backend: device(raw.backend),
        device: raw.device ?? undefined,
        steps: raw.steps.map((s) => ({ node: s.node, op: s.op, runsOn: device(s.runs_on), why: s.why ?? undefined, outputs: s.outputs })),
        copies: raw.copies.map((c) => ({
          value: c.value,
          bytes: c.bytes,
          direction: c.direction === 'HostToDevice' ? 'toDevice' : 'toHost',
          beforeStep: c.before_step,
          cause: { Fallback: 'fallback', Count: 'count' }[c.cause] ?? 'inputOutput',
        })),
      };
    });
  }

  /** Frees the session's memory (wasm and GPU). */
  async release() {
    await this.#queue;
    // A dead instance is not called again: its memory goes with it.
    if (!this.#instance.dead) this.#instance.call(() => this.#inner?.free());
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
  const data = await modelBytes(bytes);
  const instance = await ensureInit();
  const raw = instance.call((glue) => glue.readTensorProto(data));
  return { name: raw.name, tensor: fromWasm(raw) };
}

/** This build: version, SIMD128, backends. */
export async function buildInfo() {
  const instance = await ensureInit();
  return JSON.parse(instance.call((glue) => glue.buildInfo()));
}
