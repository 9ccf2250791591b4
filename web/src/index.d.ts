// Types of the Tessera npm package (see index.js). Names follow onnxruntime-web.

export type TensorType =
  | 'float32' | 'float64' | 'float16'
  | 'int8' | 'int16' | 'int32' | 'int64'
  | 'uint8' | 'uint16' | 'uint32' | 'uint64'
  | 'bool';

export interface TensorDataTypes {
  float32: Float32Array;
  float64: Float64Array;
  float16: Uint16Array;
  int8: Int8Array;
  int16: Int16Array;
  int32: Int32Array;
  int64: BigInt64Array;
  uint8: Uint8Array;
  uint16: Uint16Array;
  uint32: Uint32Array;
  uint64: BigUint64Array;
  bool: Uint8Array;
}

export type TensorData = TensorDataTypes[TensorType];

export class Tensor<T extends TensorType = TensorType> {
  constructor(type: T, data: TensorDataTypes[T] | readonly (number | bigint | boolean)[], dims?: readonly number[]);
  constructor(data: TensorDataTypes[T], dims?: readonly number[]);
  readonly type: T;
  /** The elements; reading it on a 'gpu-buffer' tensor throws (use `getData()`). */
  readonly data: TensorDataTypes[T];
  readonly dims: readonly number[];
  readonly size: number;
  /** 'cpu', or 'gpu-buffer' for a run's output kept in WebGPU memory. */
  readonly location: 'cpu' | 'gpu-buffer';
  /** The elements (a 'gpu-buffer' tensor is downloaded, once). */
  getData(): Promise<TensorDataTypes[T]>;
  /** Frees a 'gpu-buffer' tensor's GPU memory now (nothing for cpu tensors). */
  dispose(): void;
}

export type Backend = 'auto' | 'webgpu' | 'cpu' | 'wasm';

export interface SessionOptions {
  /** 'auto' (default): WebGPU when a hardware adapter exists, else cpu; the choice is reported. */
  backend?: Backend;
  /** onnxruntime-web style: the first entry picks the backend ('webgpu' or 'wasm'). */
  executionProviders?: readonly (string | { name: string })[];
  /** On WebGPU, run the ops it lacks on the cpu (each copy reported) instead of refusing. */
  allowFallback?: boolean;
  /**
   * 'gpu-buffer': on WebGPU, run() leaves outputs in GPU memory (`location: 'gpu-buffer'`), to
   * feed later runs of any session without a copy. On the cpu backend outputs are on the cpu.
   */
  preferredOutputLocation?: 'cpu' | 'gpu-buffer';
  /**
   * The cpu's threads (default `env.wasm.numThreads`, else 1; 0: that default). More than one
   * runs the threaded module, in Node.js (worker_threads) and on a cross-origin isolated page:
   * on other pages one thread, with a console warning saying why. At most the machine's cores
   * (`navigator.hardwareConcurrency`, `os.availableParallelism()`): more is capped there, with a
   * console warning; `numThreads` and `backendReason` of the session say so.
   */
  numThreads?: number;
}

/** Settings, as onnxruntime-web's `env`: `wasm.numThreads` is cpu sessions' thread count (default 1). */
export const env: { wasm: { numThreads: number | undefined } };

export interface ValueMetadata {
  name: string;
  type: TensorType;
  /** Numbers, symbolic dim names, or null for an unnamed open dim; null when undeclared. */
  shape: (number | string | null)[] | null;
  isTensor: true;
}

/** Where a plan's steps run: the answer to "which device runs each op". */
export interface Placement {
  backend: 'webgpu' | 'cpu';
  /** The WebGPU adapter; undefined on cpu. */
  device?: string;
  steps: { node: string; op: string; runsOn: 'webgpu' | 'cpu'; why?: string; outputs: string[] }[];
  /** Copies per run: graph inputs and outputs, those a step on the cpu causes (`fallback`), and
   * the counts a staged model reads back between stages (`count`). */
  copies: { value: string; bytes: number; direction: 'toDevice' | 'toHost'; beforeStep: number; cause: 'inputOutput' | 'fallback' | 'count' }[];
}

/** Time per run, in ms, slowest first. */
export interface Profile {
  /** How it was measured. */
  method: string;
  runs: number;
  perOp: { op: string; msPerRun: number; nodes: number }[];
  perNode: { node: string; op: string; msPerRun: number }[];
}

export class InferenceSession {
  static create(model: string | URL | Uint8Array | ArrayBuffer | ArrayBufferView, options?: SessionOptions): Promise<InferenceSession>;
  /** 'webgpu' or 'cpu'. */
  readonly backend: 'webgpu' | 'cpu';
  /** Why this backend runs the session, and on the cpu its threads (and why only one). */
  readonly backendReason: string;
  /** The threads a cpu run may use: 1 on WebGPU and in the one-threaded module. */
  readonly numThreads: number;
  /** The WebGPU adapter, when on WebGPU. */
  readonly device: string | undefined;
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly ValueMetadata[];
  readonly outputMetadata: readonly ValueMetadata[];
  /** Feeds may be 'gpu-buffer' tensors from earlier runs (WebGPU sessions only). */
  run(feeds: Record<string, Tensor>, fetches?: readonly string[]): Promise<Record<string, Tensor>>;
  /** Bytes the last run copied between cpu and GPU; undefined on the cpu backend. */
  readonly lastTransfers: { inputBytes: number; outputBytes: number; fallbackBytes: number; countBytes: number } | undefined;
  /** Where each step runs for these feeds, and what a run copies between cpu and GPU (nothing is run). */
  placement(feeds: Record<string, Tensor>): Promise<Placement>;
  /** Where a run's time goes on the cpu backend: every node timed over `runs` runs (default 10). */
  profile(feeds: Record<string, Tensor>, options?: { runs?: number }): Promise<Profile>;
  release(): Promise<void>;
}

export function readTensorProto(bytes: string | URL | Uint8Array | ArrayBuffer): Promise<{ name: string; tensor: Tensor }>;

/** The one-threaded module's build: version, SIMD128, threads (false), backends. */
export function buildInfo(): Promise<{ version: string; simd128: boolean; threads: boolean; backends: string[] }>;

/** `error.code` of an Error caused by the wasm module trapping (a panic: a bug in tessera). */
export const WASM_TRAP: 'TESSERA_WASM_TRAP';

/**
 * The module instance in use: `instance` numbers them from 1 (0: none loaded yet); `dead` is why
 * it trapped, or null. After a trap every session of that instance rejects with a `WASM_TRAP`
 * Error and the next `InferenceSession.create` starts a fresh instance.
 */
export function moduleStatus(): {
  instance: number;
  dead: string | null;
  /** The threaded module's instance (0: not started), and its pool's workers. */
  threaded: { instance: number; dead: string | null; threads: number };
};

/**
 * Makes the module panic (and so trap), to test how the package copes; with `afterAwait`, in the
 * futures queue after the call returned. Not part of the API.
 */
export function trapForTests(message?: string, options?: { afterAwait?: boolean }): Promise<void>;

/**
 * The same in the threaded module (started with `threads` workers if need be): on the page's
 * thread, or with `onWorker` on a worker of the pool. Not part of the API.
 */
export function trapThreadedForTests(message?: string, options?: { threads?: number; onWorker?: boolean }): Promise<void>;
