//! `GridSample` and `Dft` on the host, for checking device kernels: tract's semantics
//! (ONNX/PyTorch), written over flat arrays in the order the kernels compute (the DFT in f64).

use super::{Arg, fail};
use crate::plan::{GridPadding, GridSampleMode};
use crate::{Result, TensorData};

pub(super) fn dft(x: Arg, shape: &[usize], axis: usize, inverse: bool) -> Result<TensorData> {
    let TensorData::F32(xs) = x.data else {
        return Err(fail("Dft reads f32"));
    };
    let Some((outer, len, inner)) = crate::plan::shapes::dft_geometry(shape, axis) else {
        return Err(fail(crate::plan::shapes::DFT_SHAPES));
    };
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut out = vec![0f32; xs.len()];
    for o in 0..outer {
        for k in 0..len {
            for pair in (0..inner).step_by(2) {
                let (mut re, mut im) = (0f64, 0f64);
                for n in 0..len {
                    let angle = sign * std::f64::consts::TAU * ((k * n) % len) as f64 / len as f64;
                    let (s, c) = angle.sin_cos();
                    let at = (o * len + n) * inner + pair;
                    let (xr, xi) = (f64::from(xs[at]), f64::from(xs[at + 1]));
                    re += xr * c - xi * s;
                    im += xr * s + xi * c;
                }
                let at = (o * len + k) * inner + pair;
                out[at] = re as f32;
                out[at + 1] = im as f32;
            }
        }
    }
    Ok(TensorData::F32(out))
}

struct Sampler<'a> {
    x: &'a [f32],
    sizes: &'a [usize],
    padding: GridPadding,
    align_corners: bool,
}

impl Sampler<'_> {
    fn bounds(&self, size: usize) -> (f32, f32) {
        if self.align_corners {
            (0.0, size as f32 - 1.0)
        } else {
            (-0.5, size as f32 - 0.5)
        }
    }

    fn pad(&self, c: f32, (lo, hi): (f32, f32)) -> f32 {
        match self.padding {
            GridPadding::Border => c.clamp(0.0, hi + lo),
            GridPadding::Reflection => reflect(c, lo, hi),
            GridPadding::Zeros => c,
        }
    }

    /// The input value at integer coordinates of one `(n, c)` plane starting at `base`.
    fn pixel(&self, base: usize, coords: &[isize]) -> f32 {
        let mut at = 0usize;
        for (&c, &size) in coords.iter().zip(self.sizes) {
            let c = match self.padding {
                GridPadding::Zeros if c < 0 || c >= size as isize => return 0.0,
                GridPadding::Zeros => c as usize,
                GridPadding::Border => c.clamp(0, size as isize - 1) as usize,
                GridPadding::Reflection => {
                    let (lo, hi) = self.bounds(size);
                    (reflect(c as f32, lo, hi) as isize).clamp(0, size as isize - 1) as usize
                }
            };
            at = at * size + c;
        }
        self.x[base + at]
    }
}

/// tract's reflection of `x` into `[lo, hi]`.
fn reflect(x: f32, lo: f32, hi: f32) -> f32 {
    let range = hi - lo;
    if range == 0.0 {
        return lo;
    }
    if x < lo {
        let d = lo - x;
        let n = (d / range) as i32;
        let r = d - n as f32 * range;
        if n % 2 == 0 { lo + r } else { hi - r }
    } else if x > hi {
        let d = x - hi;
        let n = (d / range) as i32;
        let r = d - n as f32 * range;
        if n % 2 == 0 { hi - r } else { lo + r }
    } else {
        x
    }
}

fn cubic_coefficients(t: f32) -> [f32; 4] {
    let a = -0.75f32;
    let (p1, m1, m2) = (t + 1.0, 1.0 - t, 2.0 - t);
    [
        ((a * p1 - 5.0 * a) * p1 + 8.0 * a) * p1 - 4.0 * a,
        ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0,
        ((a + 2.0) * m1 - (a + 3.0)) * m1 * m1 + 1.0,
        ((a * m2 - 5.0 * a) * m2 + 8.0 * a) * m2 - 4.0 * a,
    ]
}

pub(super) fn grid_sample(
    x: Arg,
    grid: Arg,
    mode: GridSampleMode,
    padding: GridPadding,
    align_corners: bool,
) -> Result<TensorData> {
    let (TensorData::F32(xs), TensorData::F32(gs)) = (x.data, grid.data) else {
        return Err(fail("GridSample reads f32"));
    };
    let Some(k) = crate::plan::shapes::grid_sample_axes(x.shape, grid.shape, mode) else {
        return Err(fail(crate::plan::shapes::GRID_SAMPLE_SHAPES));
    };
    let (batch, channels) = (x.shape[0], x.shape[1]);
    let sizes = &x.shape[2..];
    let plane: usize = sizes.iter().product();
    let positions: usize = grid.shape[1..=k].iter().product();
    let sampler = Sampler {
        x: xs,
        sizes,
        padding,
        align_corners,
    };
    let mut out = Vec::with_capacity(batch * channels * positions);
    for b in 0..batch {
        for c in 0..channels {
            let base = (b * channels + c) * plane;
            for o in 0..positions {
                let g = &gs[(b * positions + o) * k..][..k];
                let mut coords = [0f32; 3];
                for (d, &size) in sizes.iter().enumerate() {
                    let v = g[k - 1 - d];
                    coords[d] = if align_corners {
                        (v + 1.0) / 2.0 * (size as f32 - 1.0)
                    } else {
                        ((v + 1.0) * size as f32 - 1.0) / 2.0
                    };
                }
                let coords = &mut coords[..k];
                if mode == GridSampleMode::Nearest {
                    coords.iter_mut().for_each(|c| *c = c.round_ties_even());
                }
                let outside = coords.iter().zip(sizes).any(|(&c, &s)| {
                    let (lo, hi) = sampler.bounds(s);
                    c < lo || c > hi
                });
                if outside {
                    for (c, &s) in coords.iter_mut().zip(sizes) {
                        *c = sampler.pad(*c, sampler.bounds(s));
                    }
                }
                let value = match mode {
                    GridSampleMode::Nearest => {
                        let at: Vec<isize> = coords.iter().map(|&c| c as isize).collect();
                        sampler.pixel(base, &at)
                    }
                    GridSampleMode::Bilinear => {
                        let mut acc = 0f32;
                        for corner in 0..1usize << k {
                            let mut weight = 1f32;
                            let mut at = [0isize; 3];
                            for (d, &c) in coords.iter().enumerate() {
                                let lo = c.floor() as isize;
                                if (corner >> d) & 1 == 0 {
                                    at[d] = lo;
                                    weight *= (lo + 1) as f32 - c;
                                } else {
                                    at[d] = lo + 1;
                                    weight *= c - lo as f32;
                                }
                            }
                            acc += weight * sampler.pixel(base, &at[..k]);
                        }
                        acc
                    }
                    GridSampleMode::Bicubic => {
                        let (x0, y0) = (
                            coords[0].floor() as isize - 1,
                            coords[1].floor() as isize - 1,
                        );
                        let cx = cubic_coefficients(coords[0] - x0 as f32 - 1.0);
                        let cy = cubic_coefficients(coords[1] - y0 as f32 - 1.0);
                        let mut acc = 0f32;
                        for (h, wy) in cy.iter().enumerate() {
                            let mut row = 0f32;
                            for (w, wx) in cx.iter().enumerate() {
                                row +=
                                    wx * sampler.pixel(base, &[x0 + w as isize, y0 + h as isize]);
                            }
                            acc += wy * row;
                        }
                        acc
                    }
                };
                out.push(value);
            }
        }
    }
    Ok(TensorData::F32(out))
}
