//! Kernel tests: every template, expanded for a representative set of ops and dtypes, must
//! parse and validate with naga (what wgpu does when it builds the pipeline).

use super::{Kernel, StepIo, encode, expand, shader};
use tessera_core::DType;
use tessera_core::plan::{
    BinaryOp, KernelOp, PadMode, Role, ScatterReduction, UnaryOp, Value, ValueId,
};
use wgpu::naga;

/// The dtypes wgpu holds.
const DTYPES: [DType; 10] = [
    DType::F32,
    DType::F16,
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::U16,
    DType::U32,
    DType::Bool,
];

pub(super) fn value(id: usize, shape: &[usize], dtype: DType) -> Value {
    Value {
        id: ValueId(id),
        name: format!("v{id}"),
        shape: shape.to_vec(),
        dtype,
        role: Role::Intermediate,
        alias_of: None,
        outlet: None,
    }
}

/// Parses and validates every dispatch of `kernel`, naming `what` on failure.
fn validate(what: &str, kernel: &Kernel) {
    if let Err(e) = try_validate(what, kernel) {
        panic!("{e}");
    }
}

fn try_validate(what: &str, kernel: &Kernel) -> Result<(), String> {
    for dispatch in &kernel.dispatches {
        let source = expand(&dispatch.shader).map_err(|e| format!("{what}: {e}"))?;
        let module = naga::front::wgsl::parse_str(&source).map_err(|e| {
            format!(
                "{what}: {} does not parse:\n{}",
                dispatch.shader.name,
                e.emit_to_string(&source)
            )
        })?;
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::default(),
        )
        .validate(&module)
        .map_err(|e| {
            format!(
                "{what}: {} does not validate:\n{}",
                dispatch.shader.name,
                e.emit_to_string(&source)
            )
        })?;
    }
    Ok(())
}

/// Encodes `op` for inputs and outputs of these shapes and dtypes, then validates its shaders.
fn check(op: &KernelOp, inputs: &[(&[usize], DType)], outputs: &[(&[usize], DType)]) {
    let values: Vec<Value> = inputs
        .iter()
        .chain(outputs)
        .enumerate()
        .map(|(ix, (shape, dtype))| value(ix, shape, *dtype))
        .collect();
    let io = StepIo {
        inputs: values[..inputs.len()].iter().collect(),
        outputs: values[inputs.len()..].iter().collect(),
    };
    let kernel = encode(op, &io).unwrap_or_else(|e| panic!("{}: {e}", op.name()));
    validate(&format!("{op:?}"), &kernel);
}

#[test]
fn expand_rejects_missing_defines() {
    let template = shader("t.wgsl", "let x: {{T}} = 0;", vec![]);
    assert!(expand(&template).is_err());
    let defined = shader("t.wgsl", "const x: {{T}} = 0;", vec![("T", "u32".into())]);
    let source = expand(&defined).unwrap();
    assert!(source.ends_with("const x: u32 = 0;") && source.contains("fn thread_index"));
}

/// Every unary and binary op the kernel table accepts, for a dtype of each word.
#[test]
fn unary_and_binary_shaders_validate() {
    let unary = [
        UnaryOp::Abs,
        UnaryOp::Neg,
        UnaryOp::Sign,
        UnaryOp::Exp,
        UnaryOp::Ln,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Recip,
        UnaryOp::Square,
        UnaryOp::Sigmoid,
        UnaryOp::Tanh,
        UnaryOp::Erf,
        UnaryOp::Silu,
        UnaryOp::GeluExact,
        UnaryOp::HardSwish,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::RoundHalfToEven,
        UnaryOp::Not,
        UnaryOp::BitNot,
        UnaryOp::LeakyRelu { alpha: 0.1 },
        UnaryOp::PowConst { exponent: 2.0 },
        UnaryOp::IsNan,
        UnaryOp::IsInf {
            detect_positive: true,
            detect_negative: false,
        },
    ];
    let mut failures = vec![];
    for op in unary {
        for dtype in [DType::F32, DType::I8, DType::U16, DType::Bool] {
            let out_dtype = match op {
                UnaryOp::IsNan | UnaryOp::IsInf { .. } => DType::Bool,
                _ => dtype,
            };
            let kernel_op = KernelOp::Unary {
                op,
                dtype,
                out_dtype,
            };
            let values = [value(0, &[5], dtype), value(1, &[5], out_dtype)];
            let io = StepIo {
                inputs: vec![&values[0]],
                outputs: vec![&values[1]],
            };
            // Not every op has a kernel for every dtype; those that do must compile.
            if let Ok(kernel) = encode(&kernel_op, &io) {
                failures.extend(try_validate(&format!("{kernel_op:?}"), &kernel).err());
            }
        }
    }
    let binary = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Rem,
        BinaryOp::Pow,
        BinaryOp::Min,
        BinaryOp::Max,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
        BinaryOp::BitAnd,
        BinaryOp::BitOr,
        BinaryOp::BitXor,
        BinaryOp::ShiftLeft,
        BinaryOp::ShiftRight,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
    ];
    for op in binary {
        for dtype in [DType::F32, DType::I16, DType::U8, DType::Bool] {
            let kernel_op = KernelOp::Binary {
                op,
                dtype,
                a_shape: vec![2, 3],
                b_shape: vec![1, 3],
                out_shape: vec![2, 3],
            };
            let out = if op.is_comparison() {
                DType::Bool
            } else {
                dtype
            };
            let values = [
                value(0, &[2, 3], dtype),
                value(1, &[3], dtype),
                value(2, &[2, 3], out),
            ];
            let io = StepIo {
                inputs: vec![&values[0], &values[1]],
                outputs: vec![&values[2]],
            };
            if let Ok(kernel) = encode(&kernel_op, &io) {
                failures.extend(try_validate(&format!("{kernel_op:?}"), &kernel).err());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn select_shaders_validate() {
    for dtype in [DType::F32, DType::I64, DType::Bool] {
        let op = KernelOp::Select {
            cond_shape: vec![2, 1],
            a_shape: vec![2, 3],
            b_shape: vec![1, 3],
            out_shape: vec![2, 3],
        };
        check(
            &op,
            &[(&[2, 1], DType::Bool), (&[2, 3], dtype), (&[3], dtype)],
            &[(&[2, 3], dtype)],
        );
    }
}

#[test]
fn every_cast_validates() {
    for from in DTYPES {
        for to in DTYPES {
            check(&KernelOp::Cast { from, to }, &[(&[7], from)], &[(&[7], to)]);
        }
    }
}

#[test]
fn quantization_shaders_validate() {
    for to in [DType::U8, DType::I8] {
        let op = KernelOp::Quantize {
            inv_scale: 10.0,
            zero_point: 3,
            to,
        };
        check(&op, &[(&[4], DType::F32)], &[(&[4], to)]);
        let table: Vec<u8> = (0..=255).collect();
        for from in [DType::U8, DType::I8] {
            let op = KernelOp::LookupTable {
                table: table.clone(),
                dtype: to,
            };
            check(&op, &[(&[4], from)], &[(&[4], to)]);
        }
    }
    for from in [DType::U8, DType::I8, DType::I32] {
        let op = KernelOp::Dequantize {
            scale: 0.5,
            zero_point: 1,
            from,
        };
        check(&op, &[(&[4], from)], &[(&[4], DType::F32)]);
    }
}

#[test]
fn shape_shaders_validate() {
    for dtype in [DType::F32, DType::I64, DType::U8, DType::Bool] {
        let x: &[usize] = &[2, 3, 4];
        let op = KernelOp::Transpose {
            dtype,
            input_shape: x.to_vec(),
            perm: vec![2, 0, 1],
        };
        check(&op, &[(x, dtype)], &[(&[4, 2, 3], dtype)]);
        let op = KernelOp::Slice {
            dtype,
            input_shape: x.to_vec(),
            axis: 1,
            start: 1,
            end: 3,
            step: 1,
        };
        check(&op, &[(x, dtype)], &[(&[2, 2, 4], dtype)]);
        let op = KernelOp::Concat {
            dtype,
            axis: 1,
            input_shapes: vec![x.to_vec(), vec![2, 1, 4], x.to_vec()],
        };
        check(
            &op,
            &[(x, dtype), (&[2, 1, 4], dtype), (x, dtype)],
            &[(&[2, 7, 4], dtype)],
        );
        for index_dtype in [DType::I64, DType::I32, DType::U8] {
            let op = KernelOp::Gather {
                dtype,
                data_shape: x.to_vec(),
                indices_shape: vec![5],
                index_dtype,
                axis: 1,
            };
            check(
                &op,
                &[(x, dtype), (&[5], index_dtype)],
                &[(&[2, 5, 4], dtype)],
            );
        }
        for mode in [PadMode::Constant(1.5), PadMode::Reflect, PadMode::Edge] {
            let op = KernelOp::Pad {
                dtype,
                input_shape: x.to_vec(),
                pads: vec![(0, 1), (2, 0), (1, 1)],
                mode,
            };
            check(&op, &[(x, dtype)], &[(&[3, 5, 6], dtype)]);
        }
        let op = KernelOp::Broadcast {
            dtype,
            input_shape: vec![1, 3, 1],
            output_shape: x.to_vec(),
        };
        check(&op, &[(&[3, 1], dtype)], &[(x, dtype)]);
        let op = KernelOp::Upsample {
            dtype,
            input_shape: x.to_vec(),
            scales: vec![1, 2, 3],
        };
        check(&op, &[(x, dtype)], &[(&[2, 6, 12], dtype)]);
    }
}

#[test]
fn indexing_shaders_validate() {
    let (data, indices): (&[usize], &[usize]) = (&[2, 3, 4], &[2, 5, 3]);
    for dtype in DTYPES {
        for index_dtype in [DType::I64, DType::I32, DType::U8] {
            let op = KernelOp::GatherElements {
                dtype,
                data_shape: data.to_vec(),
                indices_shape: indices.to_vec(),
                index_dtype,
                axis: 1,
            };
            check(
                &op,
                &[(data, dtype), (indices, index_dtype)],
                &[(indices, dtype)],
            );
        }
        let reductions = [
            ScatterReduction::None,
            ScatterReduction::Add,
            ScatterReduction::Mul,
            ScatterReduction::Max,
            ScatterReduction::Min,
        ];
        for reduction in reductions {
            if dtype == DType::Bool && reduction != ScatterReduction::None {
                continue;
            }
            let op = KernelOp::ScatterElements {
                dtype,
                data_shape: data.to_vec(),
                indices_shape: vec![2, 5, 3],
                index_dtype: DType::I64,
                axis: 1,
                reduction,
            };
            check(
                &op,
                &[(data, dtype), (indices, DType::I64), (indices, dtype)],
                &[(data, dtype)],
            );
        }
        for upper in [false, true] {
            let op = KernelOp::Trilu {
                dtype,
                shape: data.to_vec(),
                upper,
            };
            check(&op, &[(data, dtype), (&[], DType::I64)], &[(data, dtype)]);
        }
        for index_dtype in [DType::I64, DType::U16, DType::F32] {
            let op = KernelOp::OneHot {
                dtype,
                indices_shape: vec![2, 3],
                index_dtype,
                axis: 1,
                depth: 4,
                off: 0.0,
                on: 1.0,
            };
            check(&op, &[(&[2, 3], index_dtype)], &[(&[2, 4, 3], dtype)]);
        }
    }
}

#[test]
fn bad_parameters_are_errors() {
    let values = [value(0, &[2, 3], DType::F32), value(1, &[3, 2], DType::F32)];
    let io = StepIo {
        inputs: vec![&values[0]],
        outputs: vec![&values[1]],
    };
    let bad = [
        KernelOp::Transpose {
            dtype: DType::F32,
            input_shape: vec![2, 3],
            perm: vec![1, 1],
        },
        KernelOp::Slice {
            dtype: DType::F32,
            input_shape: vec![2, 3],
            axis: 2,
            start: 0,
            end: 1,
            step: 1,
        },
        KernelOp::Upsample {
            dtype: DType::F32,
            input_shape: vec![2, 3],
            scales: vec![0, 1],
        },
        KernelOp::Cast {
            from: DType::F64,
            to: DType::F32,
        },
        KernelOp::Quantize {
            inv_scale: 1.0,
            zero_point: 0,
            to: DType::I32,
        },
        KernelOp::GatherElements {
            dtype: DType::F32,
            data_shape: vec![2, 3],
            indices_shape: vec![3, 2],
            index_dtype: DType::I64,
            axis: 1,
        },
        KernelOp::ScatterElements {
            dtype: DType::Bool,
            data_shape: vec![2, 3],
            indices_shape: vec![2, 3],
            index_dtype: DType::I64,
            axis: 1,
            reduction: ScatterReduction::Add,
        },
        KernelOp::Trilu {
            dtype: DType::F32,
            shape: vec![6],
            upper: true,
        },
        KernelOp::OneHot {
            dtype: DType::F32,
            indices_shape: vec![2, 3],
            index_dtype: DType::Bool,
            axis: 1,
            depth: 2,
            off: 0.0,
            on: 1.0,
        },
    ];
    for op in bad {
        assert!(encode(&op, &io).is_err(), "{op:?}");
    }
}
