// The package a user installs: `npm pack` builds it (prepack runs build.sh), so it always holds
// both wasm modules (one-threaded with WebGPU, threaded cpu); where the toolchain is missing it
// refuses with what is missing instead of packing a package with no wasm in it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const web = fileURLToPath(new URL('..', import.meta.url));
const MINUTES = 60_000;

function pack(env) {
  return spawnSync('npm', ['pack', '--dry-run', '--json', '--foreground-scripts'], { cwd: web, env, encoding: 'utf8', timeout: 20 * MINUTES });
}

test('npm pack builds both modules and packs them with their glue, the API and types', { timeout: 20 * MINUTES }, () => {
  const result = pack(process.env);
  assert.equal(result.status, 0, result.stderr);
  const [{ files }] = JSON.parse(result.stdout.slice(result.stdout.indexOf('[')));
  const paths = files.map((f) => f.path);
  const modules = ['dist/wasm/tessera_wasm_bg.wasm', 'dist/wasm-threads/tessera_wasm_bg.wasm'];
  for (const path of ['dist/index.js', 'dist/index.d.ts', 'dist/wasm/tessera_wasm.js', 'dist/wasm-threads/tessera_wasm.js', ...modules, 'README.md', 'package.json']) {
    assert.ok(paths.includes(path), `${path} in ${paths}`);
  }
  // The threaded module's pool workers load wasm-bindgen-rayon's script from beside its glue.
  assert.ok(paths.some((p) => /^dist\/wasm-threads\/snippets\/wasm-bindgen-rayon-[0-9a-f]+\/src\/workerHelpers\.no-bundler\.js$/.test(p)), `the pool's worker script in ${paths}`);
  for (const path of modules) {
    const wasm = files.find((f) => f.path === path);
    assert.ok(wasm.size > 1_000_000, `${path} is ${wasm.size} bytes`);
  }
});

test('npm pack without the wasm toolchain refuses and says what is missing', { timeout: 5 * MINUTES }, () => {
  // Only node and npm on the PATH: no cargo, rustup or wasm-bindgen.
  const result = pack({ ...process.env, PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, CARGO_HOME: '/nonexistent', RUSTUP_HOME: '/nonexistent' });
  assert.notEqual(result.status, 0);
  assert.match(result.stderr, /cannot build the package; missing:/);
  assert.match(result.stderr, /wasm-bindgen-cli \d+\.\d+\.\d+/);
});
