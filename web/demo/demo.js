// The demo: render text on a canvas, classify its orientation (0° or 180°) with PP-OCR's
// direction classifier, show the result, the backend that ran it, and the latency.
import { InferenceSession, Tensor } from '../dist/index.js';

const MODEL = '../examples/text-orientation/model.onnx';
const [H, W] = [48, 192];
const $ = (id) => document.getElementById(id);
const canvas = $('canvas');
const context = canvas.getContext('2d', { willReadFrequently: true });
let session;

function draw() {
  context.resetTransform();
  context.fillStyle = '#fff';
  context.fillRect(0, 0, W, H);
  if ($('flip').checked) context.setTransform(-1, 0, 0, -1, W, H);
  context.fillStyle = '#000';
  context.font = '22px sans-serif';
  context.textBaseline = 'middle';
  context.fillText($('text').value, 6, H / 2, W - 12);
}

/** CHW float32 in [-1, 1], as PaddleOCR's classifier was trained. */
function pixels() {
  const rgba = context.getImageData(0, 0, W, H).data;
  const chw = new Float32Array(3 * H * W);
  for (let i = 0; i < H * W; i++) {
    for (let c = 0; c < 3; c++) chw[c * H * W + i] = (rgba[4 * i + c] / 255 - 0.5) / 0.5;
  }
  return new Tensor('float32', chw, [1, 3, H, W]);
}

async function load() {
  await session?.release();
  session = undefined;
  $('result').dataset.state = 'loading';
  $('result').textContent = 'loading the model…';
  session = await InferenceSession.create(MODEL, { backend: $('choice').value });
  $('backend').textContent = `${session.backend}: ${session.backendReason}${session.device ? ` (${session.device})` : ''}`;
}

async function classify() {
  if (!session) return;
  draw();
  const x = pixels();
  const started = performance.now();
  const outputs = await session.run({ [session.inputNames[0]]: x });
  const elapsed = performance.now() - started;
  const [upright, flipped] = outputs[session.outputNames[0]].data;
  const label = upright >= flipped ? 'upright (0°)' : 'upside down (180°)';
  $('result').textContent = `${label}, ${(100 * Math.max(upright, flipped)).toFixed(1)}% sure`;
  $('result').dataset.state = 'done';
  $('latency').textContent = `${elapsed.toFixed(1)} ms`;
}

async function guarded(work) {
  try {
    await work();
  } catch (error) {
    $('result').dataset.state = 'error';
    $('result').textContent = `error: ${error.message}`;
  }
}

$('text').addEventListener('input', () => guarded(classify));
$('flip').addEventListener('change', () => guarded(classify));
$('choice').addEventListener('change', () => guarded(async () => { await load(); await classify(); }));
draw();
guarded(async () => { await load(); await classify(); });
