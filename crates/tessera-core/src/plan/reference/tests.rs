//! Kernels on tiny hand-made inputs, checked against values worked out by hand or by a
//! direct loop written differently from the kernel.

use super::*;
use crate::plan::{BinaryOp, KernelOp, MatLayout, PadMode, ReduceOp, ScatterReduction, Window};

fn f32s(t: &TensorData) -> Vec<f32> {
    match t {
        TensorData::F32(v) => v.clone(),
        other => panic!("expected f32, got {}", other.dtype()),
    }
}

fn step(op: KernelOp) -> Step {
    Step {
        node: "test".into(),
        op,
        inputs: vec![],
        outputs: vec![],
    }
}

/// Runs one op on `(shape, data)` inputs; the output shape is only used by a few ops.
fn run(
    op: KernelOp,
    inputs: &[(Vec<usize>, TensorData)],
    out: (&[usize], DType),
) -> Vec<TensorData> {
    let args: Vec<Arg> = inputs
        .iter()
        .map(|(shape, data)| Arg { shape, data })
        .collect();
    run_step(&step(op), &args, &[out]).unwrap()
}

fn close(actual: &[f32], expected: &[f32]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (a, e) in actual.iter().zip(expected) {
        assert!(
            (a - e).abs() <= 1e-5 + 1e-5 * e.abs(),
            "{actual:?} vs {expected:?}"
        );
    }
}

fn seq(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

fn plain(_rows: usize, cols: usize) -> MatLayout {
    MatLayout {
        offset: 0,
        batch_strides: vec![],
        row_stride: cols,
        col_stride: 1,
    }
}

#[test]
fn matmul_with_broadcast_and_transposed_strides() {
    // A: [2 batches, 2x3]; B: one 3x2 matrix shared by both batches (batch stride 0), stored
    // transposed (as [2, 3]); C: [2, 2, 2].
    let a = seq(12);
    let b = vec![1.0, 0.0, 2.0, /* col 1 */ 0.0, 1.0, -1.0];
    let op = KernelOp::MatMul {
        dtype: DType::F32,
        out_shape: vec![2, 2, 2],
        batch: vec![2],
        m: 2,
        k: 3,
        n: 2,
        a: MatLayout {
            batch_strides: vec![6],
            ..plain(2, 3)
        },
        b: MatLayout {
            offset: 0,
            batch_strides: vec![0],
            row_stride: 1,
            col_stride: 3,
        },
        c: MatLayout {
            batch_strides: vec![4],
            ..plain(2, 2)
        },
    };
    let out = run(
        op,
        &[
            (vec![2, 2, 3], TensorData::F32(a.clone())),
            (vec![2, 3], TensorData::F32(b.clone())),
        ],
        (&[2, 2, 2], DType::F32),
    );
    // Direct loop: B[k][n] = b[n * 3 + k].
    let mut expected = vec![];
    for batch in 0..2 {
        for m in 0..2 {
            for n in 0..2 {
                expected.push(
                    (0..3)
                        .map(|k| a[batch * 6 + m * 3 + k] * b[n * 3 + k])
                        .sum(),
                );
            }
        }
    }
    close(&f32s(&out[0]), &expected);
    assert_eq!(f32s(&out[0])[..2], [4.0, -1.0]);
}

#[test]
fn matmul_integers() {
    let op = KernelOp::MatMul {
        dtype: DType::I64,
        out_shape: vec![1, 1],
        batch: vec![],
        m: 1,
        k: 2,
        n: 1,
        a: plain(1, 2),
        b: plain(2, 1),
        c: plain(1, 1),
    };
    let out = run(
        op,
        &[
            (vec![1, 2], TensorData::I64(vec![3, -4])),
            (vec![2, 1], TensorData::I64(vec![5, 6])),
        ],
        (&[1, 1], DType::I64),
    );
    assert_eq!(out[0], TensorData::I64(vec![-9]));
}

/// A direct 2D convolution, NCHW, batch 1.
#[allow(clippy::too_many_arguments)]
fn direct_conv(
    x: &[f32],
    (c, h, w): (usize, usize, usize),
    weights: &[f32],
    (o, kh, kw): (usize, usize, usize),
    group: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
    (oh, ow): (usize, usize),
) -> Vec<f32> {
    let (ig, og) = (c / group, o / group);
    let mut out = vec![0.0; o * oh * ow];
    for oc in 0..o {
        let g = oc / og;
        for y in 0..oh {
            for xo in 0..ow {
                let mut acc = 0.0;
                for ci in 0..ig {
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let iy = (y * stride + ky * dilation) as i64 - pad as i64;
                            let ix = (xo * stride + kx * dilation) as i64 - pad as i64;
                            if iy < 0 || ix < 0 || iy >= h as i64 || ix >= w as i64 {
                                continue;
                            }
                            let xv = x[((g * ig + ci) * h + iy as usize) * w + ix as usize];
                            let wv = weights[((oc * ig + ci) * kh + ky) * kw + kx];
                            acc += xv * wv;
                        }
                    }
                }
                out[(oc * oh + y) * ow + xo] = acc;
            }
        }
    }
    out
}

fn window2(
    input: (usize, usize),
    output: (usize, usize),
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
) -> Window {
    Window {
        batch: 1,
        batch_axis: true,
        channels_last: false,
        input: vec![input.0, input.1],
        output: vec![output.0, output.1],
        kernel: vec![kernel, kernel],
        strides: vec![stride, stride],
        dilations: vec![dilation, dilation],
        pads_before: vec![pad, pad],
        pads_after: vec![pad, pad],
    }
}

#[test]
fn conv_with_padding_stride_dilation_groups() {
    // 4 channels in 2 groups -> 6 channels; 5x6 input, 3x3 kernel, stride 2, dilation 2, pad 2.
    let (c, h, w, o, k) = (4, 5, 6, 6, 3);
    let (stride, dilation, pad) = (2, 2, 2);
    let oh = (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
    let ow = (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
    let x: Vec<f32> = (0..c * h * w)
        .map(|i| ((i * 7) % 11) as f32 - 5.0)
        .collect();
    let weights: Vec<f32> = (0..o * 2 * k * k)
        .map(|i| ((i * 5) % 7) as f32 * 0.5 - 1.0)
        .collect();
    let bias: Vec<f32> = (0..o).map(|i| i as f32 * 0.25).collect();
    let op = KernelOp::Conv {
        dtype: DType::F32,
        window: window2((h, w), (oh, ow), k, stride, dilation, pad),
        in_channels: c,
        out_channels: o,
        group: 2,
        has_bias: true,
    };
    let out = run(
        op,
        &[
            (vec![1, c, h, w], TensorData::F32(x.clone())),
            (vec![o, 2, k, k], TensorData::F32(weights.clone())),
            (vec![o], TensorData::F32(bias.clone())),
        ],
        (&[1, o, oh, ow], DType::F32),
    );
    let mut expected = direct_conv(
        &x,
        (c, h, w),
        &weights,
        (o, k, k),
        2,
        stride,
        dilation,
        pad,
        (oh, ow),
    );
    for (i, v) in expected.iter_mut().enumerate() {
        *v += bias[i / (oh * ow)];
    }
    close(&f32s(&out[0]), &expected);
}

#[test]
fn conv_channels_last_matches_channels_first() {
    let (c, h, w, o) = (2, 3, 3, 1);
    let x: Vec<f32> = seq(c * h * w);
    let weights = vec![1.0; o * c];
    // NHWC copy of x.
    let mut nhwc = vec![0.0; x.len()];
    for ch in 0..c {
        for p in 0..h * w {
            nhwc[p * c + ch] = x[ch * h * w + p];
        }
    }
    let mut window = window2((h, w), (h, w), 1, 1, 1, 0);
    window.channels_last = true;
    let op = KernelOp::Conv {
        dtype: DType::F32,
        window,
        in_channels: c,
        out_channels: o,
        group: 1,
        has_bias: false,
    };
    let out = run(
        op,
        &[
            (vec![1, h, w, c], TensorData::F32(nhwc)),
            (vec![o, c, 1, 1], TensorData::F32(weights)),
        ],
        (&[1, h, w, o], DType::F32),
    );
    let expected: Vec<f32> = (0..h * w).map(|p| x[p] + x[h * w + p]).collect();
    close(&f32s(&out[0]), &expected);
}

#[test]
fn conv_transpose_stride_two() {
    // One channel 2x2 -> 4x4 with a 2x2 kernel, stride 2: each input pixel stamps the kernel.
    let mut window = window2((2, 2), (4, 4), 2, 2, 1, 0);
    window.batch = 1;
    let op = KernelOp::ConvTranspose {
        dtype: DType::F32,
        window,
        in_channels: 1,
        out_channels: 1,
        group: 1,
        adjustments: vec![0, 0],
        has_bias: true,
    };
    let out = run(
        op,
        &[
            (vec![1, 1, 2, 2], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0])),
            (
                vec![1, 1, 2, 2],
                TensorData::F32(vec![1.0, 10.0, 100.0, 1000.0]),
            ),
            (vec![1], TensorData::F32(vec![0.5])),
        ],
        (&[1, 1, 4, 4], DType::F32),
    );
    let k = [1.0, 10.0, 100.0, 1000.0];
    let xs = [1.0, 2.0, 3.0, 4.0];
    let mut expected = vec![0.5; 16];
    for iy in 0..2 {
        for ix in 0..2 {
            for ky in 0..2 {
                for kx in 0..2 {
                    expected[(iy * 2 + ky) * 4 + ix * 2 + kx] += xs[iy * 2 + ix] * k[ky * 2 + kx];
                }
            }
        }
    }
    close(&f32s(&out[0]), &expected);
}

#[test]
fn pools_ignore_padding() {
    let window = window2((2, 2), (2, 2), 2, 1, 1, 1);
    let window = Window {
        pads_after: vec![0, 0],
        ..window
    };
    let x = (vec![1, 1, 2, 2], TensorData::F32(vec![1.0, -2.0, 3.0, 4.0]));
    let max = run(
        KernelOp::MaxPool {
            dtype: DType::F32,
            window: window.clone(),
            channels: 1,
        },
        std::slice::from_ref(&x),
        (&[1, 1, 2, 2], DType::F32),
    );
    close(&f32s(&max[0]), &[1.0, 1.0, 3.0, 4.0]);
    let avg = |count_include_pad| {
        f32s(
            &run(
                KernelOp::SumPool {
                    dtype: DType::F32,
                    window: window.clone(),
                    channels: 1,
                    normalize: true,
                    count_include_pad,
                },
                std::slice::from_ref(&x),
                (&[1, 1, 2, 2], DType::F32),
            )[0],
        )
    };
    close(&avg(false), &[1.0, -0.5, 2.0, 1.5]);
    close(&avg(true), &[0.25, -0.25, 1.0, 1.5]);
}

#[test]
fn transpose_permutes_axes() {
    let op = KernelOp::Transpose {
        dtype: DType::I32,
        input_shape: vec![2, 3, 2],
        perm: vec![2, 0, 1],
    };
    let out = run(
        op,
        &[(vec![2, 3, 2], TensorData::I32((0..12).collect()))],
        (&[2, 2, 3], DType::I32),
    );
    // out[a][b][c] = in[b][c][a] = b*6 + c*2 + a.
    assert_eq!(
        out[0],
        TensorData::I32(vec![0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11])
    );
}

#[test]
fn gather_with_negative_indices() {
    let op = KernelOp::Gather {
        dtype: DType::F32,
        data_shape: vec![2, 3],
        indices_shape: vec![2],
        index_dtype: DType::I64,
        axis: 1,
    };
    let out = run(
        op.clone(),
        &[
            (vec![2, 3], TensorData::F32(seq(6))),
            (vec![2], TensorData::I64(vec![-1, 0])),
        ],
        (&[2, 2], DType::F32),
    );
    close(&f32s(&out[0]), &[2.0, 0.0, 5.0, 3.0]);
    // Out of range: an error, not a panic.
    let args = [
        (vec![2, 3], TensorData::F32(seq(6))),
        (vec![2], TensorData::I64(vec![3, 0])),
    ];
    let args: Vec<Arg> = args
        .iter()
        .map(|(shape, data)| Arg { shape, data })
        .collect();
    assert!(run_step(&step(op), &args, &[(&[2, 2], DType::F32)]).is_err());
}

#[test]
fn softmax_and_log_softmax() {
    let x = (vec![2, 2], TensorData::F32(vec![0.0, 1.0, 1000.0, 1000.0]));
    let op = |log| KernelOp::Softmax {
        dtype: DType::F32,
        shape: vec![2, 2],
        axes: vec![1],
        log,
    };
    let e = std::f32::consts::E;
    let soft = run(op(false), std::slice::from_ref(&x), (&[2, 2], DType::F32));
    close(&f32s(&soft[0]), &[1.0 / (1.0 + e), e / (1.0 + e), 0.5, 0.5]);
    let log = run(op(true), std::slice::from_ref(&x), (&[2, 2], DType::F32));
    let l = (1.0 + e).ln();
    close(
        &f32s(&log[0]),
        &[-l, 1.0 - l, -(2.0f32.ln()), -(2.0f32.ln())],
    );
}

#[test]
fn reduce_over_two_axes_and_argmax() {
    let x = (vec![2, 2, 2], TensorData::F32(seq(8)));
    let sum = run(
        KernelOp::Reduce {
            op: ReduceOp::Sum,
            dtype: DType::F32,
            input_shape: vec![2, 2, 2],
            axes: vec![0, 2],
        },
        std::slice::from_ref(&x),
        (&[1, 2, 1], DType::F32),
    );
    close(
        &f32s(&sum[0]),
        &[0.0 + 1.0 + 4.0 + 5.0, 2.0 + 3.0 + 6.0 + 7.0],
    );
    let arg = run(
        KernelOp::Reduce {
            op: ReduceOp::ArgMax { last: false },
            dtype: DType::F32,
            input_shape: vec![2, 2, 2],
            axes: vec![1],
        },
        std::slice::from_ref(&x),
        (&[2, 1, 2], DType::I64),
    );
    assert_eq!(arg[0], TensorData::I64(vec![1, 1, 1, 1]));
}

#[test]
fn binary_broadcasts_and_integers_are_exact() {
    let out = run(
        KernelOp::Binary {
            op: BinaryOp::Sub,
            dtype: DType::I64,
            a_shape: vec![2, 1],
            b_shape: vec![1, 3],
            out_shape: vec![2, 3],
        },
        &[
            (vec![2, 1], TensorData::I64(vec![i64::MAX, 10])),
            (vec![3], TensorData::I64(vec![0, 1, 20])),
        ],
        (&[2, 3], DType::I64),
    );
    assert_eq!(
        out[0],
        TensorData::I64(vec![i64::MAX, i64::MAX - 1, i64::MAX - 20, 10, 9, -10])
    );
}

#[test]
fn pad_modes() {
    let x = (vec![3], TensorData::F32(vec![1.0, 2.0, 3.0]));
    let pad = |mode| {
        f32s(
            &run(
                KernelOp::Pad {
                    dtype: DType::F32,
                    input_shape: vec![3],
                    pads: vec![(2, 2)],
                    mode,
                },
                std::slice::from_ref(&x),
                (&[7], DType::F32),
            )[0],
        )
    };
    close(
        &pad(PadMode::Constant(9.0)),
        &[9.0, 9.0, 1.0, 2.0, 3.0, 9.0, 9.0],
    );
    close(&pad(PadMode::Edge), &[1.0, 1.0, 1.0, 2.0, 3.0, 3.0, 3.0]);
    close(&pad(PadMode::Reflect), &[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]);
}

fn try_run(
    op: KernelOp,
    inputs: &[(Vec<usize>, TensorData)],
    out: (&[usize], DType),
) -> Result<Vec<TensorData>> {
    let args: Vec<Arg> = inputs
        .iter()
        .map(|(shape, data)| Arg { shape, data })
        .collect();
    run_step(&step(op), &args, &[out])
}

#[test]
fn gather_elements_follows_the_onnx_examples() {
    // ONNX GatherElements example 1: axis 1 of [[1, 2], [3, 4]] with [[0, 0], [1, 0]].
    let op = |axis, indices_shape: Vec<usize>| KernelOp::GatherElements {
        dtype: DType::F32,
        data_shape: vec![2, 2],
        indices_shape,
        index_dtype: DType::I64,
        axis,
    };
    let data = (vec![2, 2], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0]));
    let out = run(
        op(1, vec![2, 2]),
        &[
            data.clone(),
            (vec![2, 2], TensorData::I64(vec![0, 0, 1, 0])),
        ],
        (&[2, 2], DType::F32),
    );
    close(&f32s(&out[0]), &[1.0, 1.0, 4.0, 3.0]);
    // Axis 0, negative indices, fewer index rows than data rows.
    let out = run(
        op(0, vec![1, 2]),
        &[data.clone(), (vec![1, 2], TensorData::I64(vec![-1, 0]))],
        (&[1, 2], DType::F32),
    );
    close(&f32s(&out[0]), &[3.0, 2.0]);
    for bad in [2, -3] {
        let result = try_run(
            op(0, vec![1, 2]),
            &[data.clone(), (vec![1, 2], TensorData::I64(vec![0, bad]))],
            (&[1, 2], DType::F32),
        );
        assert!(result.is_err(), "index {bad}");
    }
}

#[test]
fn scatter_elements_reductions_apply_in_order() {
    let op = |axis, reduction| KernelOp::ScatterElements {
        dtype: DType::F32,
        data_shape: vec![1, 5],
        indices_shape: vec![1, 2],
        index_dtype: DType::I64,
        axis,
        reduction,
    };
    let inputs = [
        (vec![1, 5], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0])),
        (vec![1, 2], TensorData::I64(vec![1, -4])),
        (vec![1, 2], TensorData::F32(vec![1.1, 2.1])),
    ];
    let expect = [
        (ScatterReduction::None, [1.0, 2.1, 3.0, 4.0, 5.0]),
        (ScatterReduction::Add, [1.0, 5.2, 3.0, 4.0, 5.0]),
        (ScatterReduction::Mul, [1.0, 2.0 * 1.1 * 2.1, 3.0, 4.0, 5.0]),
        (ScatterReduction::Max, [1.0, 2.1, 3.0, 4.0, 5.0]),
        (ScatterReduction::Min, [1.0, 1.1, 3.0, 4.0, 5.0]),
    ];
    for (reduction, expected) in expect {
        let out = run(op(1, reduction), &inputs, (&[1, 5], DType::F32));
        close(&f32s(&out[0]), &expected);
    }
    // Integers wrap at their width.
    let op = KernelOp::ScatterElements {
        dtype: DType::I8,
        data_shape: vec![3],
        indices_shape: vec![2],
        index_dtype: DType::I32,
        axis: 0,
        reduction: ScatterReduction::Add,
    };
    let out = run(
        op.clone(),
        &[
            (vec![3], TensorData::I8(vec![100, 0, 0])),
            (vec![2], TensorData::I32(vec![0, 0])),
            (vec![2], TensorData::I8(vec![20, 10])),
        ],
        (&[3], DType::I8),
    );
    assert_eq!(out[0], TensorData::I8(vec![-126, 0, 0]));
    let result = try_run(
        op,
        &[
            (vec![3], TensorData::I8(vec![0; 3])),
            (vec![2], TensorData::I32(vec![0, 3])),
            (vec![2], TensorData::I8(vec![1, 1])),
        ],
        (&[3], DType::I8),
    );
    assert!(result.is_err());
}

#[test]
fn trilu_keeps_a_triangle() {
    let x = (vec![3, 3], TensorData::I32((1..=9).collect()));
    let trilu = |upper, k: i64| {
        let op = KernelOp::Trilu {
            dtype: DType::I32,
            shape: vec![3, 3],
            upper,
        };
        run(
            op,
            &[x.clone(), (vec![], TensorData::I64(vec![k]))],
            (&[3, 3], DType::I32),
        )
        .remove(0)
    };
    assert_eq!(
        trilu(true, 0),
        TensorData::I32(vec![1, 2, 3, 0, 5, 6, 0, 0, 9])
    );
    assert_eq!(
        trilu(true, 1),
        TensorData::I32(vec![0, 2, 3, 0, 0, 6, 0, 0, 0])
    );
    assert_eq!(
        trilu(false, -1),
        TensorData::I32(vec![0, 0, 0, 4, 0, 0, 7, 8, 0])
    );
    assert_eq!(trilu(false, 5), TensorData::I32((1..=9).collect()));
}

#[test]
fn one_hot_with_axis_and_negative_indices() {
    let op = |axis, index_dtype| KernelOp::OneHot {
        dtype: DType::F32,
        indices_shape: vec![2],
        index_dtype,
        axis,
        depth: 3,
        off: 1.0,
        on: 5.0,
    };
    // Axis 1: one row per index; -1 is the last; 3 is out of range (all off).
    let out = run(
        op(1, DType::I64),
        &[(vec![2], TensorData::I64(vec![-1, 3]))],
        (&[2, 3], DType::F32),
    );
    close(&f32s(&out[0]), &[1.0, 1.0, 5.0, 1.0, 1.0, 1.0]);
    // Axis 0, float indices truncated toward zero.
    let out = run(
        op(0, DType::F32),
        &[(vec![2], TensorData::F32(vec![1.7, -2.5]))],
        (&[3, 2], DType::F32),
    );
    close(&f32s(&out[0]), &[1.0, 1.0, 5.0, 5.0, 1.0, 1.0]);
}

#[test]
fn opaque_steps_are_an_error_naming_the_op() {
    let err = run_step(
        &step(KernelOp::Opaque {
            tract_op: "Scan".into(),
        }),
        &[],
        &[],
    )
    .unwrap_err();
    assert!(err.to_string().contains("Scan"), "{err}");
}

#[test]
fn conv_transpose_weights_are_output_major_with_groups() {
    // 2 input channels in 2 groups -> 4 output channels, 1x1 kernel, stride 1, one pixel:
    // weights [O = 4, I/group = 1, 1, 1]; output channel o reads input channel o / 2.
    let window = window2((1, 1), (1, 1), 1, 1, 1, 0);
    let op = KernelOp::ConvTranspose {
        dtype: DType::F32,
        window,
        in_channels: 2,
        out_channels: 4,
        group: 2,
        adjustments: vec![0, 0],
        has_bias: false,
    };
    let out = run(
        op,
        &[
            (vec![1, 2, 1, 1], TensorData::F32(vec![3.0, 5.0])),
            (
                vec![4, 1, 1, 1],
                TensorData::F32(vec![1.0, 10.0, 100.0, 1000.0]),
            ),
        ],
        (&[1, 4, 1, 1], DType::F32),
    );
    close(&f32s(&out[0]), &[3.0, 30.0, 500.0, 5000.0]);
}

mod whole_plans {
    //! `execute`, `execute_traced` and `execute_step` on a small hand-made plan.

    use super::*;
    use crate::plan::{UnaryOp, Value, ValueId};

    fn value(id: usize, shape: &[usize], role: Role, alias_of: Option<usize>) -> Value {
        Value {
            id: ValueId(id),
            name: format!("v{id}"),
            shape: shape.to_vec(),
            dtype: DType::F32,
            role,
            alias_of: alias_of.map(ValueId),
            outlet: None,
        }
    }

    fn plan_step(op: KernelOp, inputs: &[usize], outputs: &[usize]) -> Step {
        Step {
            node: format!("s{}", outputs[0]),
            op,
            inputs: inputs.iter().copied().map(ValueId).collect(),
            outputs: outputs.iter().copied().map(ValueId).collect(),
        }
    }

    fn unary(op: UnaryOp) -> KernelOp {
        KernelOp::Unary {
            op,
            dtype: DType::F32,
            out_dtype: DType::F32,
        }
    }

    /// x [2, 3] -> a = exp(x); b = a viewed as [6]; c = -b (output 0);
    /// d = x + a (output 1); e = d viewed as [3, 2] (output 2).
    fn plan() -> Plan {
        let values = vec![
            value(0, &[2, 3], Role::Input(0), None),
            value(1, &[2, 3], Role::Intermediate, None),
            value(2, &[6], Role::Intermediate, Some(1)),
            value(3, &[6], Role::Output(0), None),
            value(4, &[2, 3], Role::Output(1), None),
            value(5, &[3, 2], Role::Output(2), Some(4)),
        ];
        let steps = vec![
            plan_step(unary(UnaryOp::Exp), &[0], &[1]),
            plan_step(unary(UnaryOp::Neg), &[2], &[3]),
            plan_step(
                KernelOp::Binary {
                    op: BinaryOp::Add,
                    dtype: DType::F32,
                    a_shape: vec![2, 3],
                    b_shape: vec![2, 3],
                    out_shape: vec![2, 3],
                },
                &[0, 1],
                &[4],
            ),
        ];
        let outputs = vec![ValueId(3), ValueId(4), ValueId(5)];
        Plan {
            values,
            constants: vec![],
            steps,
            inputs: vec![ValueId(0)],
            outputs,
        }
    }

    fn x() -> Tensor {
        Tensor::from_vec(vec![2, 3], vec![0.0f32, 1.0, -1.0, 0.5, 2.0, -2.0]).unwrap()
    }

    fn values(t: &Tensor) -> Vec<f32> {
        t.as_slice::<f32>().unwrap().to_vec()
    }

    #[test]
    fn traced_holds_every_value_shaped_as_the_plan() {
        let plan = plan();
        let trace = execute_traced(&plan, &[x()]).unwrap();
        assert_eq!(trace.len(), plan.values.len());
        let trace: Vec<Tensor> = trace.into_iter().map(Option::unwrap).collect();
        for (t, v) in trace.iter().zip(&plan.values) {
            assert_eq!(t.shape(), v.shape.as_slice(), "{}", v.name);
        }
        let xs = values(&x());
        let exp: Vec<f32> = xs.iter().map(|v| v.exp()).collect();
        assert_eq!(trace[0], x());
        close(&values(&trace[1]), &exp);
        // The view holds its source's elements with its own shape.
        assert_eq!(values(&trace[2]), values(&trace[1]));
        let neg: Vec<f32> = exp.iter().map(|v| -v).collect();
        close(&values(&trace[3]), &neg);
        let sum: Vec<f32> = xs.iter().zip(&exp).map(|(a, b)| a + b).collect();
        close(&values(&trace[4]), &sum);
        assert_eq!(values(&trace[5]), values(&trace[4]));

        // `execute` returns the same outputs.
        let outputs = execute(&plan, &[x()]).unwrap();
        let traced: Vec<Tensor> = plan.outputs.iter().map(|o| trace[o.0].clone()).collect();
        assert_eq!(outputs, traced);
    }

    #[test]
    fn each_step_alone_matches_the_whole_run() {
        let plan = plan();
        let trace = execute_traced(&plan, &[x()]).unwrap();
        for (ix, step) in plan.steps.iter().enumerate() {
            let inputs: Vec<&Tensor> = step
                .inputs
                .iter()
                .map(|id| trace[id.0].as_ref().unwrap())
                .collect();
            let outputs = execute_step(&plan, ix, &inputs).unwrap();
            let expected: Vec<Tensor> = step
                .outputs
                .iter()
                .map(|id| trace[id.0].clone().unwrap())
                .collect();
            assert_eq!(outputs, expected, "step {ix}");
        }
    }

    #[test]
    fn step_inputs_are_taken_by_element_count() {
        // Step 1 reads the view b [6]; a tensor of a's shape [2, 3] (or flat) will do.
        let plan = plan();
        let a = Tensor::from_vec(vec![2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let out = execute_step(&plan, 1, &[&a]).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].shape(), &[6]);
        assert_eq!(values(&out[0]), vec![-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]);
    }

    #[test]
    fn step_errors() {
        let plan = plan();
        let x = x();
        // Wrong number of inputs, wrong dtype, wrong element count, no such step.
        assert!(matches!(
            execute_step(&plan, 2, &[&x]),
            Err(Error::InputMismatch(_))
        ));
        let ints = Tensor::from_vec(vec![2, 3], vec![0i32; 6]).unwrap();
        assert!(matches!(
            execute_step(&plan, 0, &[&ints]),
            Err(Error::InputMismatch(_))
        ));
        let short = Tensor::from_vec(vec![5], vec![0f32; 5]).unwrap();
        assert!(matches!(
            execute_step(&plan, 0, &[&short]),
            Err(Error::InputMismatch(_))
        ));
        assert!(execute_step(&plan, 3, &[&x]).is_err());
        // An opaque step names tract's op.
        let mut opaque = plan.clone();
        opaque.steps[0].op = KernelOp::Opaque {
            tract_op: "Scan".into(),
        };
        let err = execute_step(&opaque, 0, &[&x]).unwrap_err();
        assert!(err.to_string().contains("Scan"), "{err}");
        // A step whose outputs contradict its op is refused before running.
        let mut wrong = plan;
        wrong.values[1].shape = vec![3, 2];
        assert!(execute_step(&wrong, 0, &[&x]).is_err());
    }

    #[test]
    fn traced_checks_inputs_like_execute() {
        let plan = plan();
        assert!(execute_traced(&plan, &[]).is_err());
        let flat = Tensor::from_vec(vec![6], vec![0f32; 6]).unwrap();
        assert!(execute_traced(&plan, &[flat]).is_err());
    }
}

#[test]
fn grid_sample_is_tracts() {
    use crate::plan::{GridPadding, GridSampleMode};
    use tract_onnx::prelude::{IntoTValue, tvec};
    use tract_onnx::tract_core::ops::EvalOp;
    use tract_onnx::tract_core::ops::nn::grid_sample::{
        GridSample, InterpolationMode, PaddingMode,
    };
    for (x_shape, grid_shape) in [
        (vec![2usize, 3, 4, 5], vec![2usize, 3, 6, 2]),
        (vec![1, 2, 3, 4, 5], vec![1, 2, 3, 2, 3]),
    ] {
        let xs: Vec<f32> = (0..x_shape.iter().product::<usize>())
            .map(|i| (i as f32 * 0.37).sin() * 4.0)
            .collect();
        // Coordinates inside, on and past the bounds.
        let gs: Vec<f32> = (0..grid_shape.iter().product::<usize>())
            .map(|i| ((i * 37 % 41) as f32 / 40.0 - 0.5) * 3.2)
            .collect();
        let modes = [
            (InterpolationMode::Nearest, GridSampleMode::Nearest),
            (InterpolationMode::Bilinear, GridSampleMode::Bilinear),
            (InterpolationMode::Bicubic, GridSampleMode::Bicubic),
        ];
        let paddings = [
            (PaddingMode::Zeros, GridPadding::Zeros),
            (PaddingMode::Border, GridPadding::Border),
            (PaddingMode::Reflection, GridPadding::Reflection),
        ];
        for (tract_mode, mode) in &modes {
            if x_shape.len() == 5 && *mode == GridSampleMode::Bicubic {
                continue;
            }
            for (tract_padding, padding) in &paddings {
                for align_corners in [false, true] {
                    let tract_op = GridSample {
                        mode: tract_mode.clone(),
                        padding_mode: tract_padding.clone(),
                        align_corners,
                    };
                    let x = tract_onnx::prelude::Tensor::from_shape(&x_shape, &xs).unwrap();
                    let g = tract_onnx::prelude::Tensor::from_shape(&grid_shape, &gs).unwrap();
                    let expected = tract_op
                        .eval_out_of_plan(tvec![x.into_tvalue(), g.into_tvalue()])
                        .unwrap()
                        .expect("GridSample evaluates out of a plan")
                        .remove(0);
                    let expected = expected.try_as_plain_ram().unwrap();
                    let expected = expected.as_slice::<f32>().unwrap();
                    let op = KernelOp::GridSample {
                        input_shape: x_shape.clone(),
                        grid_shape: grid_shape.clone(),
                        mode: *mode,
                        padding: *padding,
                        align_corners,
                    };
                    let out = run(
                        op,
                        &[
                            (x_shape.clone(), TensorData::F32(xs.clone())),
                            (grid_shape.clone(), TensorData::F32(gs.clone())),
                        ],
                        (&[], DType::F32),
                    );
                    assert_eq!(
                        f32s(&out[0]),
                        expected,
                        "{mode:?} {padding:?} {align_corners}"
                    );
                }
            }
        }
    }
}

#[test]
fn resample_is_tracts() {
    use tract_onnx::tract_core::ops::nn::resize::{
        CoordTransformer, Interpolator, Nearest, Resize, resample_axis,
    };
    let shape = [2usize, 5, 3];
    let xs: Vec<f32> = (0..30).map(|i| (i as f32 * 0.61).cos() * 3.0).collect();
    for interpolator in [
        Interpolator::Nearest,
        Interpolator::Linear,
        Interpolator::Cubic,
    ] {
        for (len_out, scale) in [(9, 1.8f32), (3, 0.6), (5, 1.0)] {
            let resize = Resize {
                coord_transformer: CoordTransformer::HalfPixel,
                interpolator: interpolator.clone(),
                nearest: Nearest::RoundPreferCeil,
                optional_scales_input: None,
                optional_sizes_input: None,
            };
            let plan = resize.plan_axis(scale, shape[1], len_out);
            let mut expected = vec![0f32; 2 * len_out * 3];
            resample_axis(&xs, &shape, 1, &plan, 0.0, &mut expected);
            let op = KernelOp::Resample {
                input_shape: shape.to_vec(),
                axis: 1,
                window: plan.window,
                indices: plan.indices.iter().map(|&i| i as u32).collect(),
                weights: plan.weights.clone(),
                bias: vec![0.0; len_out],
            };
            let out = run(
                op,
                &[(shape.to_vec(), TensorData::F32(xs.clone()))],
                (&[], DType::F32),
            );
            assert_eq!(f32s(&out[0]), expected, "{interpolator:?} to {len_out}");
        }
    }
}

#[test]
fn dft_is_tracts() {
    use tract_onnx::prelude::{IntoTValue, tvec};
    use tract_onnx::tract_core::ops::EvalOp;
    use tract_onnx::tract_core::ops::fft::Fft;
    for (shape, axis) in [
        (vec![3usize, 7, 2], 1usize),
        (vec![8, 3, 2], 0),
        (vec![2, 2, 5, 2], 2),
    ] {
        let xs: Vec<f32> = (0..shape.iter().product::<usize>())
            .map(|i| (i as f32 * 0.7).sin())
            .collect();
        for inverse in [false, true] {
            let x = tract_onnx::prelude::Tensor::from_shape(&shape, &xs).unwrap();
            let expected = Fft { axis, inverse }
                .eval_out_of_plan(tvec![x.into_tvalue()])
                .unwrap()
                .expect("Fft evaluates out of a plan")
                .remove(0);
            let expected = expected.try_as_plain_ram().unwrap();
            let expected = expected.as_slice::<f32>().unwrap();
            let op = KernelOp::Dft {
                input_shape: shape.clone(),
                axis,
                inverse,
            };
            let out = run(
                op,
                &[(shape.clone(), TensorData::F32(xs.clone()))],
                (&[], DType::F32),
            );
            close(&f32s(&out[0]), expected);
        }
    }
}

#[test]
fn tile_repeats_each_axis() {
    let op = KernelOp::Tile {
        dtype: DType::F32,
        input_shape: vec![2, 2],
        multipliers: vec![2, 3],
    };
    let out = run(
        op,
        &[(vec![2, 2], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0]))],
        (&[4, 6], DType::F32),
    );
    let row = |a: f32, b: f32| [a, b, a, b, a, b];
    let expected: Vec<f32> = [row(1.0, 2.0), row(3.0, 4.0), row(1.0, 2.0), row(3.0, 4.0)].concat();
    assert_eq!(f32s(&out[0]), expected);
}
