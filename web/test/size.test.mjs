// What a page downloads: each shipped wasm module against onnxruntime-web's matching file from
// the same `npm ci` (issue goal: at most half, raw and gzip -9). The threaded cpu module matches
// `ort-wasm-simd-threaded.wasm` (cpu only); the one-threaded module, which carries WebGPU too,
// matches `ort-wasm-simd-threaded.jsep.wasm` (cpu and WebGPU).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const web = fileURLToPath(new URL('..', import.meta.url));
const MAX_RATIO = 0.5;

function sizes(path) {
  const bytes = readFileSync(path);
  // gzip -9, as build.sh and docs/web.md measure.
  const gzip = spawnSync('gzip', ['-9', '-c'], { input: bytes, maxBuffer: 2 * bytes.length });
  assert.equal(gzip.status, 0, String(gzip.stderr));
  return { raw: bytes.length, gzip: gzip.stdout.length };
}

for (const [ours, theirs] of [
  ['dist/wasm-threads/tessera_wasm_bg.wasm', 'ort-wasm-simd-threaded.wasm'],
  ['dist/wasm/tessera_wasm_bg.wasm', 'ort-wasm-simd-threaded.jsep.wasm'],
]) {
  test(`${ours} is at most ${MAX_RATIO}x onnxruntime-web's ${theirs}, raw and gzip`, () => {
    const tessera = sizes(`${web}/${ours}`);
    const ort = sizes(`${web}/node_modules/onnxruntime-web/dist/${theirs}`);
    const ratio = (k) => tessera[k] / ort[k];
    console.log(`${ours}: ${tessera.raw} B raw, ${tessera.gzip} B gzip; ${theirs}: ${ort.raw} / ${ort.gzip}; ` +
      `ratios ${ratio('raw').toFixed(3)} / ${ratio('gzip').toFixed(3)}`);
    assert.ok(ratio('raw') <= MAX_RATIO, `raw ${tessera.raw} B is ${ratio('raw').toFixed(3)}x of ${ort.raw}`);
    assert.ok(ratio('gzip') <= MAX_RATIO, `gzip ${tessera.gzip} B is ${ratio('gzip').toFixed(3)}x of ${ort.gzip}`);
  });
}
