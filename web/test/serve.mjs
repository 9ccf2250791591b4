// A static server for the demo, the browser tests and the benchmark. Cross-origin isolated
// (COOP/COEP), as a page must be for wasm threads. `node test/serve.mjs [port]` serves the demo.
import { createServer } from 'node:http';
import { createReadStream, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const web = fileURLToPath(new URL('..', import.meta.url));
const root = resolve(web, '..');
export const shared = process.env.TESSERA_SHARED ?? resolve(root, '..', 'shared');

// URL prefix -> folder.
const MOUNTS = {
  '/dist/': join(web, 'dist'),
  '/demo/': join(web, 'demo'),
  '/test/': join(web, 'test'),
  '/bench/': join(web, 'bench'),
  '/ort/': join(web, 'node_modules', 'onnxruntime-web', 'dist'),
  '/models/': join(shared, 'models'),
  '/node/': join(shared, 'onnx-tests', 'node'),
  '/examples/': join(root, 'examples'),
  '/testdata/': join(root, 'tests', 'data'),
};

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.css': 'text/css',
  '.png': 'image/png',
};

function locate(pathname) {
  for (const [prefix, folder] of Object.entries(MOUNTS)) {
    if (pathname.startsWith(prefix)) {
      const file = resolve(folder, decodeURIComponent(pathname.slice(prefix.length)));
      // Never serve outside the mounted folder.
      return file === folder || file.startsWith(folder + sep) ? file : undefined;
    }
  }
  return undefined;
}

/** `isolated: false` leaves out COOP/COEP, as on a page not set up for wasm threads. */
export function startServer(port = 0, { isolated = true } = {}) {
  const server = createServer((request, response) => {
    const { pathname } = new URL(request.url, 'http://localhost');
    if (pathname === '/') {
      response.writeHead(302, { Location: '/demo/index.html' }).end();
      return;
    }
    const file = locate(pathname);
    let stat;
    try {
      stat = file && statSync(file);
    } catch {
      stat = undefined;
    }
    if (!stat?.isFile()) {
      response.writeHead(404).end('not found');
      return;
    }
    response.writeHead(200, {
      'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream',
      'Content-Length': stat.size,
      ...(isolated ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {}),
      'Cache-Control': 'no-store',
    });
    createReadStream(file).pipe(response);
  });
  return new Promise((done) => {
    server.listen(port, '127.0.0.1', () => {
      done({ url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() });
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { url } = await startServer(Number(process.argv[2] ?? 8080));
  console.log(`demo: ${url}/demo/index.html`);
}
