// The threaded module's pool workers, started by wasm-bindgen-rayon's `initThreadPool`. This file
// takes the place of that crate's own `workerHelpers.no-bundler.js` in dist/wasm-threads/
// (web/build.sh copies it over), so that Node.js gets the pool too: there it starts
// `worker_threads` Workers; in browsers it does what the crate's file does, a module Web Worker
// per thread. Either way each worker runs this file, imports the module's glue, joins the
// module's shared memory and then runs rayon's worker loop, which never returns.

const INIT = 'wasm_bindgen_worker_init';
const READY = 'wasm_bindgen_worker_ready';

const isNode = typeof process !== 'undefined' && !!process.versions?.node;
const nodeThreads = isNode ? await import('node:worker_threads') : undefined;

/** Marks the Node.js Workers this file starts, so that it knows it is one of them. */
const NODE_POOL_WORKER = 'tessera pool worker';

/** A worker's life: join the module given by `init`, say so, then serve the pool. */
async function serve(init, reply) {
  const glue = await import(init.mainJS);
  glue.initSync(init.init);
  reply({ type: READY });
  glue.wbg_rayon_start_worker(init.receiver);
}

function nextMessage(target, type) {
  return new Promise((resolve) => {
    target.addEventListener('message', function onMessage({ data }) {
      if (data?.type !== type) return;
      target.removeEventListener('message', onMessage);
      resolve(data);
    });
  });
}

if (nodeThreads) {
  if (!nodeThreads.isMainThread && nodeThreads.workerData === NODE_POOL_WORKER) {
    const port = nodeThreads.parentPort;
    port.once('message', (init) => serve(init, (message) => port.postMessage(message)));
  }
} else {
  // In a browser this file is both the page's import and each worker's script: only a worker
  // receives the init message.
  nextMessage(self, INIT).then((init) => serve(init, (message) => postMessage(message)));
}

/** A module Web Worker running this file, fetched as a blob so that a page may load it from another origin. */
async function startWebWorker(init) {
  const url = URL.createObjectURL(await fetch(import.meta.url).then((response) => response.blob()));
  const worker = new Worker(url, { type: 'module' });
  worker.postMessage(init);
  await nextMessage(worker, READY);
  URL.revokeObjectURL(url);
  return worker;
}

/**
 * A `worker_threads` Worker running this file. Unreferenced once ready, so that the pool does not
 * keep the process alive: a run in flight does (the package holds a reference while one lasts).
 * An uncaught error in a worker is a trap (a panic aborts); the run waiting on it is told by the
 * module (it panics with the worker's message on the calling thread), so the event is only kept
 * from ending the process here.
 */
function startNodeWorker(init) {
  return new Promise((resolve, reject) => {
    const worker = new nodeThreads.Worker(new URL(import.meta.url), { workerData: NODE_POOL_WORKER });
    worker.once('error', reject);
    worker.on('message', function ready(message) {
      if (message?.type !== READY) return;
      worker.off('message', ready);
      worker.off('error', reject);
      worker.on('error', () => {});
      worker.unref();
      resolve(worker);
    });
    worker.postMessage(init);
  });
}

/** The pool's workers, held so that no browser collects a worker only its shared memory refers to. */
let poolWorkers = [];

/** wasm-bindgen-rayon's entry point: `builder.numThreads()` workers started, then rayon's pool built on them. */
export async function startWorkers(module, memory, builder) {
  const count = builder.numThreads();
  if (count === 0) throw new Error('num_threads must be > 0.');
  const init = { type: INIT, init: { module, memory }, receiver: builder.receiver(), mainJS: builder.mainJS() };
  const start = nodeThreads ? startNodeWorker : startWebWorker;
  poolWorkers = await Promise.all(Array.from({ length: count }, () => start(init)));
  builder.build();
}
