// Benchmark (not a test): the shared real models in Node.js on Tessera's cpu (the one-threaded
// module, or the threaded one on a pool of worker_threads) and on onnxruntime-web's wasm backend,
// both on the same number of threads, each model's two sessions open at once, R rounds giving each
// N timed runs in turn, the first after W warm-up runs (measure.js; default as in
// browser_vs_ort_web.mjs). Prints median latencies
// and ratios tessera/ort, one table per thread count; each thread count runs in a fresh Node.js
// process, since onnxruntime-web reads its setting once, when its module starts.
// Usage: node bench/node_vs_ort_web.mjs [--runs N] [--rounds R] [--warmup W] [--models a,b] [--threads 1,2]
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { modelsDir, sharedModels } from '../test/models.mjs';
import { measureSideBySide } from './measure.js';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith('--') ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), []));
// Rounds taking turns on one thread; with threads one round, the runtimes one after the other
// (measure.js says why). 15 timed runs either way.
const roundsFor = (threads) => Number(args.rounds ?? (threads === 1 ? 3 : 1));
const runsFor = (threads) => Number(args.runs ?? 15 / roundsFor(threads));
const warmup = Number(args.warmup ?? 30);
const only = args.models?.split(',');
const models = sharedModels().filter((m) => !only || only.includes(m.name));

if (args.child === undefined) {
  for (const threads of (args.threads ?? '1').split(',')) {
    const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...process.argv.slice(2), '--child', threads], { stdio: 'inherit' });
    if (child.status !== 0) process.exit(child.status ?? 1);
  }
} else {
  const threads = Number(args.child);
  const [rounds, runs] = [roundsFor(threads), runsFor(threads)];
  const tessera = await import('../dist/index.js');
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = threads;
  ort.env.logLevel = 'error';
  tessera.env.wasm.numThreads = threads;
  const read = async (path) => new Uint8Array(await readFile(join(modelsDir, path)));

  console.log(`Node.js ${process.version}, ${cpus().length} cores (${cpus()[0]?.model}), onnxruntime-web ${ort.env.versions?.web ?? '?'}; median of ${rounds} round(s) of ${runs} runs after ${warmup} warm-up${rounds > 1 ? ', the runtimes taking turns' : ', one runtime after the other'}; cpu on ${threads} thread(s) each`);
  console.log('| model | tessera ms | ort-web ms | ratio |');
  console.log('| --- | --- | --- | --- |');
  const ratios = [];
  for (const model of models) {
    const contenders = { tessera: { runtime: 'tessera', backend: 'cpu' }, ort: { runtime: 'ort', backend: 'wasm' } };
    const r = await measureSideBySide({ read, tessera, ort }, { name: model.name, files: model.files, threads, warmup, runs, rounds }, contenders);
    const ok = !r.tessera.error && !r.ort.error;
    if (ok) ratios.push(r.tessera.ms / r.ort.ms);
    const fmt = (x) => (x.error ? 'error' : x.ms.toFixed(1));
    console.log(`| ${model.name} | ${fmt(r.tessera)} | ${fmt(r.ort)} | ${ok ? (r.tessera.ms / r.ort.ms).toFixed(2) : '–'} |`);
    for (const [k, v] of Object.entries(r)) if (v.error) console.log(`  ${k}: ${v.error}`);
  }
  const geomean = Math.exp(ratios.reduce((s, x) => s + Math.log(x), 0) / ratios.length);
  console.log(`geomean tessera/ort-web: ${geomean.toFixed(2)} over ${ratios.length}`);
  // onnxruntime-web's pool keeps the process alive.
  process.exit(0);
}
