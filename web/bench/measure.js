// How the benchmarks time a runtime, in the browser (bench/page.html) and in Node.js
// (bench/node_vs_ort_web.mjs): the same feeds and the same median for Tessera and onnxruntime-web.

export const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A model's stored inputs (`test_data_set_0`) as tensors of `api` (Tessera's or onnxruntime-web's). */
export async function feedsFor(read, tessera, name, files, api) {
  const feeds = {};
  for (const file of files.inputs) {
    const { name: input, tensor } = await tessera.readTensorProto(await read(`${name}/test_data_set_0/${file}`));
    feeds[input] = new api.Tensor(tensor.type, tensor.data, tensor.dims);
  }
  return feeds;
}

/**
 * Median latency (ms) of `runs` runs after `warmup` of `name` on `backend` of `runtime`
 * ('tessera' or 'ort'), on `threads` cpu threads, or the error message.
 */
export async function measure({ read, tessera, ort }, { name, files, runtime, backend, threads, warmup, runs }) {
  try {
    const bytes = await read(`${name}/model.onnx`);
    const api = runtime === 'tessera' ? tessera : ort;
    // onnxruntime-web's session logs its graph optimizer's warnings ("Removing initializer ...")
    // whatever `env.logLevel` says; severity 3 keeps errors only.
    const options = runtime === 'tessera' ? { backend } : { executionProviders: [backend], graphOptimizationLevel: 'all', logSeverityLevel: 3 };
    const session = await api.InferenceSession.create(bytes, options);
    // Tessera runs at most one thread per core (onnxruntime-web runs what it is told).
    const cores = globalThis.navigator?.hardwareConcurrency ?? (await import('node:os')).availableParallelism();
    const expected = Math.min(threads, cores);
    if (runtime === 'tessera' && backend === 'cpu' && session.numThreads !== expected) {
      throw new Error(`tessera runs on ${session.numThreads} threads, not ${expected}: ${session.backendReason}`);
    }
    const feeds = await feedsFor(read, tessera, name, files, api);
    const times = [];
    for (let i = 0; i < warmup + runs; i++) {
      const started = performance.now();
      const out = await session.run(feeds);
      // onnxruntime-web's webgpu outputs come back to the cpu like Tessera's.
      for (const t of Object.values(out)) if (t.getData) await t.getData();
      if (i >= warmup) times.push(performance.now() - started);
    }
    await session.release();
    return { ms: median(times) };
  } catch (error) {
    return { error: String(error.message ?? error).slice(0, 160) };
  }
}
