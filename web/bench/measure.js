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

const errorOf = (error) => ({ error: String(error.message ?? error).slice(0, 160) });

/** A session of `runtime` ('tessera' or 'ort') on `backend` with the model's feeds. */
async function open({ read, tessera, ort }, { name, files, threads }, { runtime, backend }) {
  const bytes = await read(`${name}/model.onnx`);
  const api = runtime === 'tessera' ? tessera : ort;
  // onnxruntime-web's session logs its graph optimizer's warnings ("Removing initializer ...")
  // whatever `env.logLevel` says; severity 3 keeps errors only.
  const options = runtime === 'tessera' ? { backend } : { executionProviders: [backend], graphOptimizationLevel: 'all', logSeverityLevel: 3 };
  const session = await api.InferenceSession.create(bytes, options);
  try {
    // Tessera runs at most one thread per core (onnxruntime-web runs what it is told).
    const cores = globalThis.navigator?.hardwareConcurrency ?? (await import('node:os')).availableParallelism();
    const expected = Math.min(threads, cores);
    if (runtime === 'tessera' && backend === 'cpu' && session.numThreads !== expected) {
      throw new Error(`tessera runs on ${session.numThreads} threads, not ${expected}: ${session.backendReason}`);
    }
    return { session, feeds: await feedsFor(read, tessera, name, files, api), times: [] };
  } catch (error) {
    await session.release();
    throw error;
  }
}

/** One run's latency in ms, outputs on the cpu. */
async function timedRun({ session, feeds }) {
  const started = performance.now();
  const out = await session.run(feeds);
  // onnxruntime-web's webgpu outputs come back to the cpu like Tessera's.
  for (const t of Object.values(out)) if (t.getData) await t.getData();
  return performance.now() - started;
}

/**
 * Median latencies (ms) of one model on several runtimes, measured side by side. `contenders`:
 * `{ key: { runtime: 'tessera' | 'ort', backend } }`; resolves to `{ key: { ms } | { error } }`.
 * Every session is opened; each of `rounds` rounds gives every session `runs` timed runs in
 * turn, the first round after `warmup` runs of its own. Over several rounds a slow stretch of a
 * shared machine (seconds long on the benchmark VMs) falls on all of them, not on whichever ran
 * through it. One round is the runtimes one after the other, each timed long after the other
 * ran: with threads take that, since a block right after the other runtime's ran beside its pool
 * workers (on 2 cores at 2 and 4 threads the small models' times then moved 2-5x from pass to
 * pass, MTCNN ONet 1.9 to 5.5 ms on Tessera's side).
 */
export async function measureSideBySide(api, { name, files, threads, warmup, runs, rounds }, contenders) {
  const result = {};
  const opened = {};
  try {
    for (const [key, contender] of Object.entries(contenders)) {
      try {
        opened[key] = await open(api, { name, files, threads }, contender);
      } catch (error) {
        result[key] = errorOf(error);
      }
    }
    const running = () => Object.entries(opened).filter(([key]) => !result[key]);
    for (let round = 0; round < rounds; round++) {
      for (const [key, entry] of running()) {
        try {
          for (let i = 0; i < (round === 0 ? warmup : 0); i++) await timedRun(entry);
          for (let i = 0; i < runs; i++) entry.times.push(await timedRun(entry));
        } catch (error) {
          result[key] = errorOf(error);
        }
      }
    }
    for (const [key, entry] of running()) result[key] = { ms: median(entry.times) };
  } finally {
    for (const entry of Object.values(opened)) await entry.session.release();
  }
  return result;
}
