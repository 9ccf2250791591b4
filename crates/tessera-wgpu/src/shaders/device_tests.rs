//! Numeric kernel tests: single-step plans run on the first wgpu adapter (lavapipe in CI) and
//! compared with the core's reference interpreter. Without an adapter they fail (never skip).
//!
//! The device side here is a minimal runner (upload words, run the kernel's dispatches, read
//! the output back), written for these tests only.

use super::{Grid, Kernel, Operand, StepIo, encode, expand};
use crate::repr;
use std::sync::OnceLock;
use tessera_core::plan::{
    KernelOp, PadMode, Plan, Role, ScatterReduction, Step, Value, ValueId, reference, shapes,
};
use tessera_core::{DType, Tensor, TensorData};
use tessera_gpu::testing::held_dtypes;
use wgpu::util::DeviceExt;

fn device() -> Option<&'static (wgpu::Device, wgpu::Queue)> {
    static DEVICE: OnceLock<Option<(wgpu::Device, wgpu::Queue)>> = OnceLock::new();
    DEVICE
        .get_or_init(|| {
            let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
            descriptor.backends &= wgpu::Backends::PRIMARY;
            let instance = wgpu::Instance::new(descriptor);
            // A GPU when there is one, else lavapipe.
            let options = wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            };
            let adapter = pollster::block_on(instance.request_adapter(&options)).ok()?;
            eprintln!("kernel tests on {:?}", adapter.get_info().name);
            pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default())).ok()
        })
        .as_ref()
}

/// The device words of a tensor, as the runtime uploads constants (i64 saturated to i32).
fn to_words(data: &TensorData) -> Vec<u32> {
    repr::to_words(data, repr::Narrowing::Saturating, "test tensor")
        .expect("device words")
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Device words read back as `dtype`, as the runtime does (f16 rounded, narrow integers
/// truncated).
fn from_words(words: &[u32], dtype: DType) -> TensorData {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    repr::from_words(dtype, vec![words.len()], &bytes)
        .expect("read back")
        .into_parts()
        .1
}

fn storage(device: &wgpu::Device, words: &[u32]) -> wgpu::Buffer {
    // A binding cannot be empty.
    let words = if words.is_empty() { &[0u32][..] } else { words };
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>(),
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
    })
}

/// Runs `kernel` on `inputs` (device words) and returns the words of output 0, of `out_len`.
fn run_kernel(kernel: &Kernel, inputs: &[Vec<u32>], out_len: usize) -> Option<Vec<u32>> {
    let (device, queue) = device().expect("no wgpu adapter: kernel tests need one (install mesa-vulkan-drivers for lavapipe; CI does)");
    let inputs: Vec<wgpu::Buffer> = inputs.iter().map(|w| storage(device, w)).collect();
    // Outputs start as a pattern no kernel writes by accident.
    let output = storage(device, &vec![0xdead_beef; out_len]);
    let mut encoder = device.create_command_encoder(&Default::default());
    for dispatch in kernel.dispatches() {
        let source = expand(&dispatch.shader).expect("expand");
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(dispatch.shader.name),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(dispatch.shader.name),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let params = storage(device, &dispatch.params);
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: params.as_entire_binding(),
        }];
        for (k, operand) in dispatch.bindings.iter().enumerate() {
            let buffer = match *operand {
                Operand::Input(i) => &inputs[i],
                Operand::Output(0) => &output,
                Operand::Output(i) => panic!("output {i}: these tests read one output"),
                Operand::InputRange { .. } | Operand::Scratch { .. } => {
                    panic!("single-step tests bind whole inputs, and wgpu has no scratch")
                }
            };
            entries.push(wgpu::BindGroupEntry {
                binding: k as u32 + 1,
                resource: buffer.as_entire_binding(),
            });
        }
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let groups = match dispatch.grid {
            Grid::Threads(n) => {
                let total = n.div_ceil(64) as u32;
                let x = total.min(65535);
                [x, if x == 0 { 0 } else { total.div_ceil(x) }, 1]
            }
            Grid::Groups(g) => g,
        };
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
    }
    let bytes = (out_len.max(1) * 4) as u64;
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_buffer_to_buffer(&output, 0, &staging, 0, bytes);
    queue.submit([encoder.finish()]);
    staging.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
    device
        .poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .expect("poll");
    let view = staging.get_mapped_range(..).expect("mapped range");
    let words: Vec<u32> = view
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .take(out_len)
        .collect();
    Some(words)
}

fn value(id: usize, shape: &[usize], dtype: DType, role: Role) -> Value {
    Value {
        id: ValueId(id),
        name: format!("v{id}"),
        shape: shape.to_vec(),
        dtype,
        role,
        alias_of: None,
        outlet: None,
    }
}

/// Runs `op` on `inputs` on the device and in the reference interpreter; returns both outputs
/// as read back (the device's `None` without an adapter).
fn run_both(op: &KernelOp, inputs: &[Tensor]) -> (TensorData, Option<TensorData>) {
    let facts: Vec<(&[usize], DType)> = inputs.iter().map(|t| (t.shape(), t.dtype())).collect();
    let (out_shape, out_dtype) = shapes::output_shapes(op, &facts)
        .expect("shape rules")
        .expect("a lowered op")
        .remove(0);
    let mut values: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(k, t)| value(k, t.shape(), t.dtype(), Role::Input(k)))
        .collect();
    let out_id = ValueId(values.len());
    values.push(value(out_id.0, &out_shape, out_dtype, Role::Output(0)));
    let steps = vec![Step {
        node: "step".into(),
        op: op.clone(),
        inputs: (0..inputs.len()).map(ValueId).collect(),
        outputs: vec![out_id],
    }];
    let plan = Plan {
        values: values.clone(),
        constants: vec![],
        steps,
        inputs: (0..inputs.len()).map(ValueId).collect(),
        outputs: vec![out_id],
    };
    let expected = reference::execute(&plan, inputs)
        .unwrap_or_else(|e| panic!("{}: reference: {e}", op.name()))
        .remove(0)
        .into_parts()
        .1;

    let io = StepIo {
        inputs: values[..inputs.len()].iter().collect(),
        outputs: vec![&values[out_id.0]],
    };
    let kernel = encode(op, &io).unwrap_or_else(|e| panic!("{}: encode: {e}", op.name()));
    let words: Vec<Vec<u32>> = inputs.iter().map(|t| to_words(t.data())).collect();
    let actual = run_kernel(&kernel, &words, out_shape.iter().product()).map(|w| {
        let data = from_words(&w, out_dtype);
        // Integer words must hold their value at its width (narrow types wrapped).
        if !out_dtype.is_float() {
            assert_eq!(to_words(&data), w, "{op:?}: words not at their width");
        }
        data
    });
    (expected, actual)
}

/// Whether two tensors hold the same elements (NaN equal to NaN).
fn same(a: &TensorData, b: &TensorData) -> bool {
    a.dtype() == b.dtype()
        && a.len() == b.len()
        && a.to_f64_vec()
            .iter()
            .zip(b.to_f64_vec())
            .all(|(x, y)| x == &y || (x.is_nan() && y.is_nan()))
}

/// Asserts that the device computes `op` on `inputs` exactly like the reference.
fn check(op: &KernelOp, inputs: &[Tensor]) {
    let (expected, actual) = run_both(op, inputs);
    let Some(actual) = actual else {
        eprintln!("no wgpu adapter: {} not run on a device", op.name());
        return;
    };
    assert!(
        same(&expected, &actual),
        "{op:?}\ninputs: {inputs:?}\nexpected {expected:?}\n     got {actual:?}"
    );
}

/// A tensor of `dtype` holding `values` converted the way a cast would (Rust's `as`).
/// [`check`] within `atol + rtol·|expected|`: for sums of many products, which a shader
/// compiler may fuse into FMAs (one rounding where the reference has two), or of values from
/// the GPU's own `sin` and `cos`.
fn check_close(op: &KernelOp, inputs: &[Tensor], atol: f64, rtol: f64) {
    let (expected, actual) = run_both(op, inputs);
    let Some(actual) = actual else {
        eprintln!("no wgpu adapter: {} not run on a device", op.name());
        return;
    };
    let (e, a) = (expected.to_f64_vec(), actual.to_f64_vec());
    assert_eq!(e.len(), a.len(), "{op:?}");
    for (ix, (e, a)) in e.iter().zip(&a).enumerate() {
        assert!(
            (e - a).abs() <= atol + rtol * e.abs(),
            "{op:?}: element {ix}: expected {e}, got {a}"
        );
    }
}

fn tensor(shape: &[usize], dtype: DType, values: &[f64]) -> Tensor {
    let data = match dtype {
        DType::F32 => TensorData::F32(values.iter().map(|&x| x as f32).collect()),
        DType::F16 => TensorData::F16(values.iter().map(|&x| half::f16::from_f64(x)).collect()),
        DType::I8 => TensorData::I8(values.iter().map(|&x| x as i8).collect()),
        DType::I16 => TensorData::I16(values.iter().map(|&x| x as i16).collect()),
        DType::I32 => TensorData::I32(values.iter().map(|&x| x as i32).collect()),
        DType::I64 => TensorData::I64(values.iter().map(|&x| x as i64).collect()),
        DType::U8 => TensorData::U8(values.iter().map(|&x| x as u8).collect()),
        DType::U16 => TensorData::U16(values.iter().map(|&x| x as u16).collect()),
        DType::U32 => TensorData::U32(values.iter().map(|&x| x as u32).collect()),
        DType::U64 => TensorData::U64(values.iter().map(|&x| x as u64).collect()),
        DType::Bool => TensorData::Bool(values.iter().map(|&x| x != 0.0).collect()),
        other => panic!("no test tensors of {other}"),
    };
    Tensor::new(shape.to_vec(), data).expect("tensor")
}

/// `0, 1, 2, ...` as `dtype`, wrapped at its width.
fn iota(shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let values: Vec<f64> = (0..n)
        .map(|i| match dtype {
            DType::Bool => (i % 3 == 0) as u8 as f64,
            DType::I8 => (i % 256) as f64 - 128.0,
            DType::U8 => (i % 256) as f64,
            _ => i as f64 * if dtype.is_float() { 0.5 } else { 1.0 },
        })
        .collect();
    tensor(shape, dtype, &values)
}

#[test]
fn casts_match_the_reference() {
    let floats = [
        0.0,
        -0.0,
        0.5,
        -0.5,
        0.7,
        -0.7,
        1.5,
        2.5,
        -2.5,
        127.9,
        128.0,
        -128.9,
        -129.0,
        255.5,
        256.0,
        300.0,
        -300.0,
        32767.5,
        40000.0,
        -40000.0,
        65535.7,
        70000.0,
        2147483520.0,
        3.0e9,
        -3.0e9,
        5.0e9,
        1.0e20,
        -1.0e20,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let ints = [
        0.0,
        1.0,
        -1.0,
        2.0,
        100.0,
        127.0,
        -128.0,
        200.0,
        255.0,
        300.0,
        -300.0,
        32767.0,
        -32768.0,
        40000.0,
        65535.0,
        70000.0,
        -70000.0,
        16777217.0,
        2147483647.0,
        -2147483648.0,
        3.0e9,
        4294967295.0,
    ];
    for from in held_dtypes() {
        for to in held_dtypes() {
            let source = if from.is_float() {
                &floats[..]
            } else {
                &ints[..]
            };
            let all = tensor(&[source.len()], from, source);
            // i64 is i32 on the device: values beyond the i32 range (after conversion to
            // `from`, which may overflow f16 to infinity) cannot round-trip, and u32 words
            // above i32::MAX read back as negative i64. u64 is u32 alike: values past u32::MAX
            // saturate there, and negative ones wrap at 32 bits.
            let values: Vec<f64> = source
                .iter()
                .zip(all.data().to_f64_vec())
                .filter(|&(_, v)| {
                    let i64_ok = !(to == DType::I64 || from == DType::I64)
                        || v.is_nan()
                        || (-2147483648.0..2147483648.0).contains(&v);
                    let u64_ok = !(to == DType::U64 || from == DType::U64)
                        || v.is_nan()
                        || (0.0..4294967296.0).contains(&v);
                    i64_ok && u64_ok
                })
                .map(|(&v, _)| v)
                .collect();
            let x = tensor(&[values.len()], from, &values);
            check(&KernelOp::Cast { from, to }, &[x]);
        }
    }
}

#[test]
fn select_matches_the_reference() {
    for dtype in [DType::F32, DType::I64, DType::U8, DType::Bool] {
        let op = KernelOp::Select {
            cond_shape: vec![2, 1, 4],
            a_shape: vec![2, 3, 4],
            b_shape: vec![1, 3, 1],
            out_shape: vec![2, 3, 4],
        };
        let cond = tensor(
            &[2, 1, 4],
            DType::Bool,
            &[1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0],
        );
        check(&op, &[cond, iota(&[2, 3, 4], dtype), iota(&[3, 1], dtype)]);
    }
}

#[test]
fn quantization_matches_the_reference() {
    let x = tensor(
        &[14],
        DType::F32,
        &[
            0.0,
            0.05,
            0.15,
            0.25,
            -0.25,
            1.0,
            -1.0,
            12.7,
            12.9,
            -12.9,
            30.0,
            -30.0,
            1e12,
            f64::NAN,
        ],
    );
    for to in [DType::U8, DType::I8] {
        for zero_point in [0, 3, -5, 128] {
            let op = KernelOp::Quantize {
                inv_scale: 10.0,
                zero_point,
                to,
            };
            check(&op, std::slice::from_ref(&x));
        }
    }
    for from in [DType::U8, DType::I8, DType::I32] {
        let op = KernelOp::Dequantize {
            scale: 0.1,
            zero_point: 3,
            from,
        };
        let values = [0.0, 1.0, 3.0, 127.0, -128.0, 255.0, 100000.0, -7.0];
        check(&op, &[tensor(&[8], from, &values)]);
    }
    let table: Vec<u8> = (0..=255u8)
        .map(|b| b.wrapping_mul(7).wrapping_add(3))
        .collect();
    for from in [DType::U8, DType::I8] {
        for dtype in [DType::U8, DType::I8] {
            let op = KernelOp::LookupTable {
                table: table.clone(),
                dtype,
            };
            check(&op, &[iota(&[300], from)]);
        }
    }
}

#[test]
fn transpose_matches_the_reference() {
    for dtype in [DType::F32, DType::I8, DType::Bool] {
        for perm in [vec![0, 1, 2], vec![2, 0, 1], vec![1, 2, 0], vec![2, 1, 0]] {
            let op = KernelOp::Transpose {
                dtype,
                input_shape: vec![2, 3, 5],
                perm,
            };
            check(&op, &[iota(&[2, 3, 5], dtype)]);
        }
    }
    let op = KernelOp::Transpose {
        dtype: DType::F32,
        input_shape: vec![],
        perm: vec![],
    };
    check(&op, &[iota(&[], DType::F32)]);
}

#[test]
fn slice_matches_the_reference() {
    for (axis, start, end, step) in [
        (0, 1, 2, 1),
        (1, 0, 4, 2),
        (1, 1, 4, 3),
        (2, 2, 5, 1),
        (2, 0, 0, 1),
    ] {
        let op = KernelOp::Slice {
            dtype: DType::I32,
            input_shape: vec![2, 4, 5],
            axis,
            start,
            end,
            step,
        };
        check(&op, &[iota(&[2, 4, 5], DType::I32)]);
    }
}

#[test]
fn concat_matches_the_reference() {
    for axis in 0..3 {
        let shapes: Vec<Vec<usize>> = (0..3)
            .map(|k| {
                let mut s = vec![2, 3, 4];
                s[axis] = [1, 0, 3][k];
                s
            })
            .collect();
        let op = KernelOp::Concat {
            dtype: DType::F16,
            axis,
            input_shapes: shapes.clone(),
        };
        let inputs: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let n: usize = s.iter().product();
                let values: Vec<f64> = (0..n).map(|i| (100 * k + i) as f64).collect();
                tensor(s, DType::F16, &values)
            })
            .collect();
        check(&op, &inputs);
    }
}

#[test]
fn gather_matches_the_reference() {
    for index_dtype in [DType::I64, DType::I32, DType::U8] {
        let signed = index_dtype != DType::U8;
        for axis in 0..3 {
            let dim = [3, 4, 5][axis];
            let indices: Vec<f64> = if signed {
                vec![0.0, -1.0, 2.0, -(dim as f64), 1.0, 0.0]
            } else {
                vec![0.0, 2.0, 1.0, 2.0, 0.0, 1.0]
            };
            let op = KernelOp::Gather {
                dtype: DType::U16,
                data_shape: vec![3, 4, 5],
                indices_shape: vec![2, 3],
                index_dtype,
                axis,
            };
            check(
                &op,
                &[
                    iota(&[3, 4, 5], DType::U16),
                    tensor(&[2, 3], index_dtype, &indices),
                ],
            );
        }
    }
}

/// Out-of-range indices (an error in the reference) write 0 and read nothing out of bounds.
#[test]
fn gather_out_of_range_writes_zero() {
    let data = iota(&[2, 4], DType::F32);
    let op = KernelOp::Gather {
        dtype: DType::F32,
        data_shape: vec![2, 4],
        indices_shape: vec![5],
        index_dtype: DType::I64,
        axis: 1,
    };
    let indices = tensor(&[5], DType::I64, &[4.0, -5.0, 3.0, 1000.0, -2147483648.0]);
    let values = [value(0, &[2, 4], DType::F32, Role::Input(0))];
    let index_value = value(1, &[5], DType::I64, Role::Input(1));
    let out = value(2, &[2, 5], DType::F32, Role::Output(0));
    let io = StepIo {
        inputs: vec![&values[0], &index_value],
        outputs: vec![&out],
    };
    let kernel = encode(&op, &io).expect("encode");
    let Some(words) = run_kernel(
        &kernel,
        &[to_words(data.data()), to_words(indices.data())],
        10,
    ) else {
        return;
    };
    let got: Vec<f32> = words.iter().map(|&w| f32::from_bits(w)).collect();
    assert_eq!(got, [0.0, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 3.5, 0.0, 0.0]);
}

#[test]
fn pad_matches_the_reference() {
    let modes = [
        PadMode::Constant(0.0),
        PadMode::Constant(-2.75),
        PadMode::Constant(300.0),
        PadMode::Reflect,
        PadMode::Edge,
    ];
    for dtype in [
        DType::F32,
        DType::F16,
        DType::I8,
        DType::I64,
        DType::U8,
        DType::Bool,
    ] {
        for mode in &modes {
            let op = KernelOp::Pad {
                dtype,
                input_shape: vec![2, 3, 4],
                pads: vec![(1, 0), (2, 5), (0, 3)],
                mode: mode.clone(),
            };
            check(&op, &[iota(&[2, 3, 4], dtype)]);
        }
    }
    // Reflection of an axis of 1 repeats it; of 2, alternates over long pads.
    for input_shape in [vec![1, 2], vec![2, 1]] {
        let op = KernelOp::Pad {
            dtype: DType::I32,
            input_shape: input_shape.clone(),
            pads: vec![(3, 4), (5, 2)],
            mode: PadMode::Reflect,
        };
        check(&op, &[iota(&input_shape, DType::I32)]);
    }
}

#[test]
fn broadcast_upsample_and_tile_match_the_reference() {
    for (input_shape, output_shape) in [
        (vec![1, 3, 1], vec![2, 3, 4]),
        (vec![1, 1, 1], vec![2, 3, 4]),
        (vec![2, 3, 4], vec![2, 3, 4]),
        (vec![2, 1, 4], vec![2, 5, 4]),
    ] {
        let op = KernelOp::Broadcast {
            dtype: DType::U32,
            input_shape: input_shape.clone(),
            output_shape,
        };
        check(&op, &[iota(&input_shape, DType::U32)]);
    }
    for scales in [vec![1, 1, 1], vec![2, 1, 3], vec![1, 4, 2]] {
        let op = KernelOp::Upsample {
            dtype: DType::F32,
            input_shape: vec![2, 3, 2],
            scales: scales.clone(),
        };
        check(&op, &[iota(&[2, 3, 2], DType::F32)]);
        for dtype in [DType::F32, DType::I64, DType::U8] {
            let op = KernelOp::Tile {
                dtype,
                input_shape: vec![2, 3, 2],
                multipliers: scales.clone(),
            };
            check(&op, &[iota(&[2, 3, 2], dtype)]);
        }
    }
}

#[test]
fn resample_matches_the_reference() {
    // Each axis of [2, 3, 4] resampled: to fewer, more and as many positions, with zero-weight
    // taps (skipped) and extrapolated positions (the bias alone).
    let shape = [2, 3, 4];
    for (axis, len_out, window) in [(0, 3, 2), (1, 5, 4), (2, 2, 3), (2, 4, 1)] {
        let len_in = shape[axis];
        let taps = len_out * window;
        let indices: Vec<u32> = (0..taps).map(|t| ((t * 7 + 1) % len_in) as u32).collect();
        let weights: Vec<f32> = (0..taps)
            .map(|t| {
                if t % 5 == 2 {
                    0.0
                } else {
                    (t as f32 * 0.37).sin()
                }
            })
            .collect();
        let bias: Vec<f32> = (0..len_out)
            .map(|p| if p == len_out - 1 { 2.5 } else { 0.0 })
            .collect();
        let op = KernelOp::Resample {
            input_shape: shape.to_vec(),
            axis,
            window,
            indices,
            weights,
            bias,
        };
        check(&op, &[iota(&shape, DType::F32)]);
    }
}

#[test]
fn dft_matches_the_reference() {
    // Lengths 1, 2, 7 and 16 along each axis before the pairs, forward and inverse; values in
    // [-1, 1], so that 1e-5 bounds the sums of up to 16 products of the GPU's sin and cos.
    for (shape, axis) in [
        (vec![3, 7, 2], 1),
        (vec![16, 3, 2], 0),
        (vec![2, 1, 4, 2], 1),
        (vec![2, 2, 5, 2], 2),
    ] {
        let n: usize = shape.iter().product();
        let values: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin()).collect();
        for inverse in [false, true] {
            let op = KernelOp::Dft {
                input_shape: shape.clone(),
                axis,
                inverse,
            };
            check_close(&op, &[tensor(&shape, DType::F32, &values)], 1e-5, 1e-5);
        }
    }
}

#[test]
fn grid_sample_matches_the_reference() {
    use tessera_core::plan::{GridPadding, GridSampleMode};
    // Grid coordinates from -1.6 to 1.6: inside, on and past the input's bounds.
    let coordinates = |shape: &[usize]| -> Tensor {
        let values: Vec<f64> = (0..shape.iter().product::<usize>())
            .map(|i| ((i * 37 % 41) as f64 / 40.0 - 0.5) * 3.2)
            .collect();
        tensor(shape, DType::F32, &values)
    };
    for (input_shape, grid_shape) in [
        (vec![2, 3, 4, 5], vec![2, 3, 6, 2]),
        (vec![1, 2, 3, 4, 5], vec![1, 2, 3, 2, 3]),
    ] {
        let k = input_shape.len() - 2;
        for mode in [
            GridSampleMode::Nearest,
            GridSampleMode::Bilinear,
            GridSampleMode::Bicubic,
        ] {
            if k == 3 && mode == GridSampleMode::Bicubic {
                continue;
            }
            for padding in [
                GridPadding::Zeros,
                GridPadding::Border,
                GridPadding::Reflection,
            ] {
                for align_corners in [false, true] {
                    let op = KernelOp::GridSample {
                        input_shape: input_shape.clone(),
                        grid_shape: grid_shape.clone(),
                        mode,
                        padding,
                        align_corners,
                    };
                    let inputs = [iota(&input_shape, DType::F32), coordinates(&grid_shape)];
                    // Bicubic sums 16 products per output; the others match exactly.
                    if mode == GridSampleMode::Bicubic {
                        check_close(&op, &inputs, 1e-6, 1e-5);
                    } else {
                        check(&op, &inputs);
                    }
                }
            }
        }
    }
}

#[test]
fn gather_elements_matches_the_reference() {
    let data: &[usize] = &[3, 4, 5];
    for index_dtype in [DType::I64, DType::I32, DType::U8] {
        for axis in 0..3 {
            // Indices smaller than the data off `axis`, larger along it.
            let mut indices_shape = vec![2, 3, 4];
            indices_shape[axis] = 7;
            let dim = data[axis] as i64;
            let n: usize = indices_shape.iter().product();
            let values: Vec<f64> = (0..n as i64)
                .map(|i| {
                    let j = (i * 7 + 3) % dim;
                    if index_dtype != DType::U8 && i % 3 == 0 {
                        (j - dim) as f64
                    } else {
                        j as f64
                    }
                })
                .collect();
            for dtype in [DType::F32, DType::I8, DType::Bool] {
                let op = KernelOp::GatherElements {
                    dtype,
                    data_shape: data.to_vec(),
                    indices_shape: indices_shape.clone(),
                    index_dtype,
                    axis,
                };
                check(
                    &op,
                    &[
                        iota(data, dtype),
                        tensor(&indices_shape, index_dtype, &values),
                    ],
                );
            }
        }
    }
}

#[test]
fn gather_nd_matches_the_reference() {
    let data: &[usize] = &[2, 3, 4, 5];
    // (indices shape, batch_dims): whole elements, rows, slices, and within each batch.
    let cases: [(&[usize], usize); 4] =
        [(&[7, 4], 0), (&[2, 3, 2], 0), (&[6, 1], 0), (&[2, 5, 2], 1)];
    for (indices_shape, batch_dims) in cases {
        let k = indices_shape[indices_shape.len() - 1];
        let n: usize = indices_shape.iter().product();
        let values: Vec<f64> = (0..n)
            .map(|i| {
                let dim = data[batch_dims + i % k] as i64;
                let j = (i as i64 * 5 + 1) % dim;
                // Some negative indices, counting from the end.
                if i % 4 == 3 {
                    (j - dim) as f64
                } else {
                    j as f64
                }
            })
            .collect();
        for (dtype, index_dtype) in [(DType::F32, DType::I64), (DType::I8, DType::I32)] {
            let op = KernelOp::GatherNd {
                dtype,
                data_shape: data.to_vec(),
                indices_shape: indices_shape.to_vec(),
                index_dtype,
                batch_dims,
            };
            check(
                &op,
                &[
                    iota(data, dtype),
                    tensor(indices_shape, index_dtype, &values),
                ],
            );
        }
    }
}

#[test]
fn scatter_nd_matches_the_reference() {
    let data: &[usize] = &[3, 4, 5];
    // (indices shape): elements, rows, whole slices; repeated rows combine in order.
    let cases: [&[usize]; 3] = [&[9, 3], &[2, 3, 2], &[4, 1]];
    let reductions = [
        ScatterReduction::None,
        ScatterReduction::Add,
        ScatterReduction::Mul,
        ScatterReduction::Max,
        ScatterReduction::Min,
    ];
    for indices_shape in cases {
        let k = indices_shape[indices_shape.len() - 1];
        let n: usize = indices_shape.iter().product();
        let values: Vec<f64> = (0..n)
            .map(|i| {
                let dim = data[i % k] as i64;
                let j = (i as i64 * 3 + 1) % dim;
                if i % 5 == 4 {
                    (j - dim) as f64
                } else {
                    j as f64
                }
            })
            .collect();
        let mut updates_shape = indices_shape[..indices_shape.len() - 1].to_vec();
        updates_shape.extend_from_slice(&data[k..]);
        for reduction in reductions {
            for dtype in [DType::F32, DType::I32] {
                let op = KernelOp::ScatterNd {
                    dtype,
                    data_shape: data.to_vec(),
                    indices_shape: indices_shape.to_vec(),
                    index_dtype: DType::I64,
                    reduction,
                };
                check(
                    &op,
                    &[
                        iota(data, dtype),
                        tensor(indices_shape, DType::I64, &values),
                        iota(&updates_shape, dtype),
                    ],
                );
            }
        }
    }
}

#[test]
fn scatter_elements_matches_the_reference() {
    let data: &[usize] = &[3, 4, 5];
    let reductions = [
        ScatterReduction::None,
        ScatterReduction::Add,
        ScatterReduction::Mul,
        ScatterReduction::Max,
        ScatterReduction::Min,
    ];
    for axis in 0..3 {
        // Many updates per row along `axis`, so indices repeat.
        let mut indices_shape = vec![2, 3, 4];
        indices_shape[axis] = 6;
        let dim = data[axis] as i64;
        let n: usize = indices_shape.iter().product();
        let values: Vec<f64> = (0..n as i64)
            .map(|i| {
                let j = (i * 5 + i / 3) % dim;
                if i % 4 == 1 {
                    (j - dim) as f64
                } else {
                    j as f64
                }
            })
            .collect();
        for reduction in reductions {
            for dtype in [DType::F32, DType::F16, DType::I8, DType::I64, DType::U8] {
                let op = KernelOp::ScatterElements {
                    dtype,
                    data_shape: data.to_vec(),
                    indices_shape: indices_shape.clone(),
                    index_dtype: DType::I64,
                    axis,
                    reduction,
                };
                let updates: Vec<f64> = (0..n).map(|i| ((i * 37) % 11) as f64 - 4.0).collect();
                check(
                    &op,
                    &[
                        iota(data, dtype),
                        tensor(&indices_shape, DType::I64, &values),
                        tensor(&indices_shape, dtype, &updates),
                    ],
                );
            }
        }
    }
    let op = KernelOp::ScatterElements {
        dtype: DType::Bool,
        data_shape: vec![4, 3],
        indices_shape: vec![2, 2],
        index_dtype: DType::I32,
        axis: 0,
        reduction: ScatterReduction::None,
    };
    check(
        &op,
        &[
            iota(&[4, 3], DType::Bool),
            tensor(&[2, 2], DType::I32, &[3.0, -4.0, 0.0, 2.0]),
            tensor(&[2, 2], DType::Bool, &[1.0, 1.0, 0.0, 0.0]),
        ],
    );
}

#[test]
fn trilu_matches_the_reference() {
    for shape in [vec![3, 5], vec![2, 5, 3], vec![1, 4, 4]] {
        for upper in [false, true] {
            for k in [-7.0, -1.0, 0.0, 2.0, 9.0] {
                let op = KernelOp::Trilu {
                    dtype: DType::F32,
                    shape: shape.clone(),
                    upper,
                };
                check(
                    &op,
                    &[iota(&shape, DType::F32), tensor(&[], DType::I64, &[k])],
                );
            }
        }
    }
}

#[test]
fn one_hot_matches_the_reference() {
    let cases = [
        (DType::I64, vec![0.0, -1.0, 3.0, 4.0, -5.0, -4.0]),
        (DType::U8, vec![0.0, 1.0, 3.0, 4.0, 200.0, 2.0]),
        (DType::F32, vec![0.0, -1.5, 3.9, 4.0, -4.2, 2.5]),
    ];
    for (index_dtype, values) in cases {
        for axis in 0..3 {
            for (dtype, off, on) in [(DType::F32, -0.5, 3.25), (DType::I64, 2.0, -7.0)] {
                let op = KernelOp::OneHot {
                    dtype,
                    indices_shape: vec![2, 3],
                    index_dtype,
                    axis,
                    depth: 4,
                    off,
                    on,
                };
                check(&op, &[tensor(&[2, 3], index_dtype, &values)]);
            }
        }
    }
}

/// More than 65535 workgroups spread over a 2-D grid.
#[test]
fn large_dispatches_cover_every_element() {
    let op = KernelOp::Transpose {
        dtype: DType::I32,
        input_shape: vec![1031, 4099],
        perm: vec![1, 0],
    };
    check(&op, &[iota(&[1031, 4099], DType::I32)]);
}
