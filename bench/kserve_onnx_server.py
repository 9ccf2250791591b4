#!/usr/bin/env python3
"""The peer server for bench/serve_load.py: KServe's own Python model server (the `kserve`
package) running one ONNX model with onnxruntime, over the same Open Inference Protocol (v2 REST)
that `tessera serve` speaks. Written as the KServe documentation shows a custom predictor, given
the best set-up for a fair comparison: `predict` is async and runs onnxruntime in a thread pool
(onnxruntime releases the GIL), so `--concurrency` requests compute at once, like
`tessera serve --workers N`.

    pip install -r bench/requirements-serving.txt
    python3 bench/kserve_onnx_server.py --model_name NAME --model_path model.onnx --http_port 8081
"""

import argparse
import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor

import kserve
import numpy as np
import onnxruntime as ort
from kserve import InferRequest, InferResponse, InferOutput


class OnnxModel(kserve.Model):
    def __init__(self, name, path, threads, concurrency):
        super().__init__(name)
        self.path = path
        self.threads = threads
        self.pool = ThreadPoolExecutor(max_workers=concurrency)
        self.session = None

    def load(self):
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(self.path, options, providers=["CPUExecutionProvider"])
        self.ready = True
        return self.ready

    def _run(self, feeds):
        return self.session.run(None, feeds)

    async def predict(self, payload: InferRequest, headers=None, response_headers=None) -> InferResponse:
        feeds = {tensor.name: tensor.as_numpy() for tensor in payload.inputs}
        outputs = await asyncio.get_running_loop().run_in_executor(self.pool, self._run, feeds)
        infer_outputs = []
        for meta, value in zip(self.session.get_outputs(), outputs):
            value = np.asarray(value)
            out = InferOutput(name=meta.name, shape=list(value.shape), datatype=_datatype(value.dtype))
            out.set_data_from_numpy(value, binary_data=True)
            infer_outputs.append(out)
        return InferResponse(model_name=self.name, infer_outputs=infer_outputs, response_id=payload.id or str(uuid.uuid4()))


def _datatype(dtype):
    from tritonclient.utils import np_to_triton_dtype

    return np_to_triton_dtype(dtype)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(parents=[kserve.model_server.parser])
    parser.add_argument("--model_path", required=True)
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads per run")
    parser.add_argument("--concurrency", type=int, default=1, help="runs computing at once")
    args, _ = parser.parse_known_args()
    model = OnnxModel(args.model_name, args.model_path, args.threads, args.concurrency)
    model.load()
    kserve.ModelServer(http_port=args.http_port, enable_grpc=False, workers=1,
                       enable_latency_logging=False).start([model])
