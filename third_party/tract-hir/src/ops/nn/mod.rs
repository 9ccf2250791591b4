pub mod global_pools;
pub mod layer_max;
pub mod reduce;
pub mod softmax;

pub use global_pools::*;
pub use layer_max::*;
pub use reduce::{Reduce, Reducer};
pub use softmax::Softmax;

pub use tract_core::ops::nn::{DataFormat, hard_swish, sigmoid};
