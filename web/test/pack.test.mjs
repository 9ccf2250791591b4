// The package a user installs: `npm pack` builds it (prepack runs build.sh), so it always holds
// the wasm module; where the toolchain is missing it refuses with what is missing instead of
// packing a package with no wasm in it.
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

test('npm pack builds the module and packs it with its glue, API and types', { timeout: 20 * MINUTES }, () => {
  const result = pack(process.env);
  assert.equal(result.status, 0, result.stderr);
  const [{ files }] = JSON.parse(result.stdout.slice(result.stdout.indexOf('[')));
  const paths = files.map((f) => f.path);
  for (const path of ['dist/index.js', 'dist/index.d.ts', 'dist/wasm/tessera_wasm.js', 'dist/wasm/tessera_wasm_bg.wasm', 'README.md', 'package.json']) {
    assert.ok(paths.includes(path), `${path} in ${paths}`);
  }
  const wasm = files.find((f) => f.path === 'dist/wasm/tessera_wasm_bg.wasm');
  assert.ok(wasm.size > 1_000_000, `the module is ${wasm.size} bytes`);
});

test('npm pack without the wasm toolchain refuses and says what is missing', { timeout: 5 * MINUTES }, () => {
  // Only node and npm on the PATH: no cargo, rustup or wasm-bindgen.
  const result = pack({ ...process.env, PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, CARGO_HOME: '/nonexistent', RUSTUP_HOME: '/nonexistent' });
  assert.notEqual(result.status, 0);
  assert.match(result.stderr, /cannot build the package; missing:/);
  assert.match(result.stderr, /wasm-bindgen-cli \d+\.\d+\.\d+/);
});
