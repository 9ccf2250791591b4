// The shared real models and their test data files (read from TESSERA_SHARED or ../shared).
import { readdirSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { shared } from './serve.mjs';

export const modelsDir = join(shared, 'models');
export const SHARED_MODEL_COUNT = 20;

/** Every model folder with a model.onnx, and the .pb files of its first data set. */
export function sharedModels() {
  if (!existsSync(modelsDir)) {
    throw new Error(`shared models not found at ${modelsDir}: set TESSERA_SHARED`);
  }
  const names = readdirSync(modelsDir)
    .filter((name) => existsSync(join(modelsDir, name, 'model.onnx')))
    .sort();
  // A partial copy would let the suites pass having run less than they claim.
  if (names.length !== SHARED_MODEL_COUNT) {
    throw new Error(`expected the ${SHARED_MODEL_COUNT} shared models in ${modelsDir}, found ${names.length}`);
  }
  return names
    .map((name) => {
      const files = readdirSync(join(modelsDir, name, 'test_data_set_0')).sort(byIndex);
      return {
        name,
        bytes: statSync(join(modelsDir, name, 'model.onnx')).size,
        files: {
          inputs: files.filter((f) => f.startsWith('input_')),
          outputs: files.filter((f) => f.startsWith('output_')),
        },
      };
    });
}

/** input_2.pb before input_10.pb. */
function byIndex(a, b) {
  const n = (f) => Number(f.match(/_(\d+)\.pb$/)?.[1] ?? 0);
  return a.split('_')[0].localeCompare(b.split('_')[0]) || n(a) - n(b);
}
