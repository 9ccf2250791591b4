//! The dequantization of each constant of a QDQ model, by node, as the ONNX file states it.
//!
//! tract folds `DequantizeLinear(initializer)` into a float constant while it types the graph,
//! before any pass can see the integer weights. A backend with integer kernels (the cpu's, for
//! QDQ convolutions and matrix products) reads here how each folded constant was dequantized, and
//! recovers the integers exactly from the float values (`w / scale + zero`, checked to give the
//! float values back).

use crate::DType;
use crate::tensor::onnx_pb::from_proto;
use std::collections::BTreeMap;
use tract_onnx::pb::{GraphProto, NodeProto};

/// How a constant was dequantized: `(q − zero) × scale`, per tensor (one value each) or per
/// channel along `axis`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dequantization {
    pub scales: Vec<f32>,
    pub zeros: Vec<i32>,
    /// The axis the parameters run along when there are several (negative axes resolved).
    pub axis: usize,
    /// The quantized type: u8, i8 or i32 (a bias).
    pub dtype: DType,
}

/// The dequantized constants of a graph, by the name tract gives the DequantizeLinear node.
#[derive(Debug, Clone, Default)]
pub struct DequantizedConstants(BTreeMap<String, Dequantization>);

impl DequantizedConstants {
    /// Every `DequantizeLinear` of `graph` (not its subgraphs) whose input, scale and zero point
    /// are initializers of known type.
    pub fn of(graph: &GraphProto) -> DequantizedConstants {
        let initializers: BTreeMap<&str, _> = graph
            .initializer
            .iter()
            .map(|t| (t.name.as_str(), t))
            .collect();
        let mut found = BTreeMap::new();
        for node in graph
            .node
            .iter()
            .filter(|n| n.op_type == "DequantizeLinear")
        {
            let Some(values) = node
                .input
                .first()
                .and_then(|i| initializers.get(i.as_str()))
            else {
                continue;
            };
            let tensor = |slot: usize| {
                let name = node.input.get(slot).filter(|n| !n.is_empty())?;
                from_proto(initializers.get(name.as_str())?).ok()
            };
            let Some(scale) = tensor(1).filter(|t| t.dtype() == DType::F32) else {
                continue;
            };
            let dtype = match values.data_type {
                2 => DType::U8,
                3 => DType::I8,
                6 => DType::I32,
                _ => continue,
            };
            let zeros = match tensor(2) {
                Some(zero) if zero.dtype() == dtype => {
                    zero.data().to_f64_vec().iter().map(|&z| z as i32).collect()
                }
                Some(_) => continue,
                None => vec![0; scale.len()],
            };
            let rank = values.dims.len() as i64;
            let axis = attribute(node, "axis").unwrap_or(1);
            let axis = if axis < 0 { axis + rank } else { axis };
            let Ok(axis) = usize::try_from(axis) else {
                continue;
            };
            let Ok(scales) = scale.as_slice::<f32>() else {
                continue;
            };
            if scales.len() != zeros.len() || node.attribute.iter().any(|a| a.name == "block_size")
            {
                continue;
            }
            found.insert(
                tract_name(node),
                Dequantization {
                    scales: scales.to_vec(),
                    zeros,
                    axis,
                    dtype,
                },
            );
        }
        DequantizedConstants(found)
    }

    /// The dequantization done by the node tract calls `name`.
    pub fn get(&self, name: &str) -> Option<&Dequantization> {
        self.0.get(name)
    }
}

/// An integer attribute of `node`.
fn attribute(node: &NodeProto, name: &str) -> Option<i64> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.i)
}

/// The name tract-onnx gives a node: its own, else its first output's.
fn tract_name(node: &NodeProto) -> String {
    if !node.name.is_empty() {
        node.name.clone()
    } else {
        node.output.first().cloned().unwrap_or_default()
    }
}

impl Dequantization {
    /// The integers behind `values` (this dequantization's output, row-major, of `shape`), when
    /// every one of them gives its float value back exactly.
    pub fn integers(&self, values: &[f32], shape: &[usize]) -> Option<Vec<i32>> {
        let inner: usize = shape.get(self.axis + 1..).map_or(1, |s| s.iter().product());
        let channels = if self.scales.len() == 1 {
            1
        } else {
            *shape.get(self.axis).filter(|&&d| d == self.scales.len())?
        };
        let mut integers = Vec::with_capacity(values.len());
        for (ix, &value) in values.iter().enumerate() {
            let channel = if channels == 1 {
                0
            } else {
                ix / inner % channels
            };
            let (scale, zero) = (self.scales[channel], self.zeros[channel]);
            let level = (value / scale).round();
            if !level.is_finite() || level.abs() > i32::MAX as f32 / 2.0 {
                return None;
            }
            let q = level as i32 + zero;
            if ((q - zero) as f32 * scale).to_bits() != value.to_bits() {
                return None;
            }
            integers.push(q);
        }
        Some(integers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dequantize(q: &[i32], d: &Dequantization, shape: &[usize]) -> Vec<f32> {
        let inner: usize = shape[d.axis + 1..].iter().product();
        q.iter()
            .enumerate()
            .map(|(ix, &q)| {
                let c = if d.scales.len() == 1 {
                    0
                } else {
                    ix / inner % d.scales.len()
                };
                (q - d.zeros[c]) as f32 * d.scales[c]
            })
            .collect()
    }

    #[test]
    fn the_integers_come_back_exactly_per_tensor_and_per_channel() {
        let q: Vec<i32> = (0..24).map(|i| (i * 37 % 256) - 128).collect();
        let cases = [
            (vec![0.0173], vec![0], 1, vec![4, 6]),
            (vec![0.5, 0.031, 1e-4], vec![0, 3, -7], 0, vec![3, 8]),
            (
                vec![0.25, 0.0077, 3.1, 0.9],
                vec![1, 0, 0, -2],
                1,
                vec![2, 4, 3],
            ),
        ];
        for (scales, zeros, axis, shape) in cases {
            let d = Dequantization {
                scales,
                zeros,
                axis,
                dtype: DType::I8,
            };
            let values = dequantize(&q, &d, &shape);
            assert_eq!(d.integers(&values, &shape), Some(q.clone()), "{d:?}");
            // A value no integer dequantizes to, and a shape whose axis is not the channels'.
            let mut off = values.clone();
            off[5] += d.scales[0] * 0.25;
            assert_eq!(d.integers(&off, &shape), None);
            if d.scales.len() > 1 {
                assert_eq!(d.integers(&values, &[24]), None);
            }
        }
    }
}
