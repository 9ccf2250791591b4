#!/usr/bin/env python3
"""Would an AVX2 kernel on `VPMADDUBSW` (u8 inputs x s8 weights, 16-bit pair sums that saturate,
as onnxruntime's) be exact on these quantized models? Not a test: a measurement for
docs/benchmarks.md.

For each int8 weight of a QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger or QDQ
DequantizeLinear (initializers over 64 elements), adjacent weights along the depth are the pairs
one instruction sums; with u8 inputs up to 255 a pair can leave i16 only when both weights have
the same sign and |w0| + |w1| > 128 (255 x 129 > 32767). A layer is exact when no pair can.

Usage: python3 bench/quantized_pair_sums.py "DIR/*/model.onnx"   (e.g. the derived quantized suite,
~/.cache/tessera-ci/quantized); needs the `onnx` package.
"""
import glob
import sys

import numpy as np
import onnx
from onnx import numpy_helper

for path in sorted(glob.glob(sys.argv[1])):
    m = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    ok = bad = 0; worst = []
    for n in m.graph.node:
        w = None
        if n.op_type in ("QLinearConv",): w = inits.get(n.input[3])
        elif n.op_type in ("QLinearMatMul",): w = inits.get(n.input[3])
        elif n.op_type in ("MatMulInteger", "ConvInteger"): w = inits.get(n.input[1])
        elif n.op_type == "DequantizeLinear" and n.input[0] in inits and inits[n.input[0]].dtype == np.int8 and inits[n.input[0]].size > 64:
            w = inits[n.input[0]]
        if w is None or w.dtype != np.int8: continue
        w = w.astype(np.int32)
        # depth: conv weights [M, C, kh, kw] -> per output channel, flattened C*kh*kw; matmul [K, N] -> along K
        if w.ndim == 4: d = w.reshape(w.shape[0], -1)
        elif w.ndim == 2: d = w.T
        else: continue
        if d.shape[1] % 2: d = np.pad(d, ((0,0),(0,1)))
        a, b = d[:, 0::2], d[:, 1::2]
        same = (a * b) > 0
        s = np.where(same, np.abs(a) + np.abs(b), 0).max()
        if s <= 128: ok += 1
        else: bad += 1
        worst.append(s)
    print(f"{path.split('/')[-2]}: {ok} layers exact, {bad} could saturate (max same-sign pair sum: median {np.median(worst) if worst else 0:.0f})")
