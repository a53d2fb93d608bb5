use std::fmt;

use float8::{F8E4M3, F8E5M2};
use half::{bf16, f16};

use crate::ReduceOp;

/// The element types a window, a tensor or a collective may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 32-bit integer (also the dtype of every signal).
    I32,
    /// Unsigned 32-bit integer.
    U32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 64-bit integer.
    U64,
    /// IEEE 754 half precision (`half::f16`).
    F16,
    /// bfloat16 (`half::bf16`).
    BF16,
    /// IEEE 754 single precision.
    F32,
    /// IEEE 754 double precision.
    F64,
    /// 8-bit float with 4 exponent and 3 mantissa bits (OCP FP8 E4M3: no infinity, largest
    /// finite 448; `float8::F8E4M3`, `pld::f8e4m3`).
    F8E4M3,
    /// 8-bit float with 5 exponent and 2 mantissa bits (OCP FP8 E5M2, IEEE-like; largest finite
    /// 57344; `float8::F8E5M2`, `pld::f8e5m2`).
    F8E5M2,
}

impl DType {
    /// Every dtype, in a fixed order (the order of the generated kernel variants).
    pub const ALL: [DType; 12] = [
        DType::I8,
        DType::U8,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::F8E4M3,
        DType::F8E5M2,
    ];

    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// The lower-case name used in source code, kernel symbols and messages (`f32`, `bf16`).
    pub const fn name(self) -> &'static str {
        match self {
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::U64 => "u64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
        }
    }

    /// Parses a name produced by [`DType::name`].
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// True for the six floating-point types.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::F8E4M3 | DType::F8E5M2)
    }

    /// True for the two 8-bit floats, whose reductions accumulate in f32 and round once.
    pub const fn is_fp8(self) -> bool {
        matches!(self, DType::F8E4M3 | DType::F8E5M2)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that is one of the twelve pld dtypes.
///
/// Sealed: the set of element types is the set the device kernels are generated for.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a pld element type",
    label = "windows, tensors and collectives hold pld element types only",
    note = "the pld element types are i8 u8 i32 u32 i64 u64 f16 bf16 f32 f64 f8e4m3 f8e5m2"
)]
pub trait Element: bytemuck::Pod + Send + Sync + fmt::Debug + PartialEq + 'static + sealed::Sealed {
    /// The dtype this type stands for.
    const DTYPE: DType;

    /// `a op b` exactly as the device kernels compute it: integers wrap, float `max`/`min`
    /// propagate NaN, f16 and bf16 combine in f32 and round back. The host-side reference for
    /// checking results.
    /// (`Avg` and `PremulSum` combine as `Sum`: the division comes once, at the end, in
    /// [`Element::average`]; the scalar before, in [`Element::premultiply`].)
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;

    /// `x * scalar` as `op = premul_sum` scales a rank's input: floats in their compute type
    /// (f16 and bf16 in f32, rounded once), integers wrapping (the scalar is an integer there:
    /// the runtime checks it).
    fn premultiply(x: Self, scalar: f64) -> Self;

    /// `sum / n` as `op = avg` finishes a reduction: one IEEE division for floats (f16, bf16
    /// and fp8 in f32, rounded once), truncation toward zero for integers.
    fn average(sum: Self, n: usize) -> Self;

    /// The `op`-reduction of `values` (one per rank, in rank order) exactly as the device
    /// kernels compute it: a fold of [`Element::combine`] (`avg`: then [`Element::average`]),
    /// except for the fp8 types, which accumulate in f32 and round once at the end, after the
    /// division of `avg` (more accurate than rounding to 8 bits at every step). `None` for no
    /// values. The host-side reference for checking results.
    fn reduce_in_rank_order(op: ReduceOp, values: &[Self]) -> Option<Self> {
        let (first, rest) = values.split_first()?;
        let sum = rest.iter().fold(*first, |acc, &x| Self::combine(op, acc, x));
        Some(if op == ReduceOp::Avg { Self::average(sum, values.len()) } else { sum })
    }
}

/// `max`/`min` of floats as the kernels compute them: a NaN on either side wins.
fn float_combine<F: PartialOrd + std::ops::Add<Output = F> + std::ops::Mul<Output = F> + Copy>(
    op: ReduceOp,
    a: F,
    b: F,
) -> F {
    #[allow(clippy::eq_op)] // `a != a` is the NaN test, as in the generated C
    let nan = a != a;
    match op {
        ReduceOp::Sum | ReduceOp::Avg | ReduceOp::PremulSum => a + b,
        ReduceOp::Prod => a * b,
        ReduceOp::Max => {
            if a > b || nan {
                a
            } else {
                b
            }
        }
        ReduceOp::Min => {
            if a < b || nan {
                a
            } else {
                b
            }
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! integers {
    ($($ty:ty => $dtype:ident),* $(,)?) => {$(
        impl sealed::Sealed for $ty {}
        impl Element for $ty {
            const DTYPE: DType = DType::$dtype;
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum | ReduceOp::Avg | ReduceOp::PremulSum => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                }
            }
            fn average(sum: Self, n: usize) -> Self {
                // Rank counts fit every type's range once widened; the quotient fits the type.
                (i128::from(sum) / n.max(1) as i128) as $ty
            }
            fn premultiply(x: Self, scalar: f64) -> Self {
                // Two's complement wrapping of the product, through the widest type.
                (i128::from(x).wrapping_mul(scalar as i128)) as $ty
            }
        }
    )*};
}

/// Floats combine in `$wide` and round back at every step; those marked `rounds once` (the
/// fp8 types) reduce in `$wide` throughout and round once at the end.
macro_rules! floats {
    ($($ty:ty => $dtype:ident, $wide:ty, $to:expr, $from:expr $(, $once:ident)?);* $(;)?) => {$(
        impl sealed::Sealed for $ty {}
        impl Element for $ty {
            const DTYPE: DType = DType::$dtype;
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                let (to, from): (fn($ty) -> $wide, fn($wide) -> $ty) = ($to, $from);
                from(float_combine(op, to(a), to(b)))
            }
            fn average(sum: Self, n: usize) -> Self {
                let (to, from): (fn($ty) -> $wide, fn($wide) -> $ty) = ($to, $from);
                from(to(sum) / n.max(1) as $wide)
            }
            fn premultiply(x: Self, scalar: f64) -> Self {
                let (to, from): (fn($ty) -> $wide, fn($wide) -> $ty) = ($to, $from);
                from(to(x) * scalar as $wide)
            }
            $(floats!(@$once $ty, $wide, $to, $from);)?
        }
    )*};
    (@rounds_once $ty:ty, $wide:ty, $to:expr, $from:expr) => {
        fn reduce_in_rank_order(op: ReduceOp, values: &[Self]) -> Option<Self> {
            let (to, from): (fn($ty) -> $wide, fn($wide) -> $ty) = ($to, $from);
            let (first, rest) = values.split_first()?;
            let wide = rest.iter().fold(to(*first), |acc, &x| float_combine(op, acc, to(x)));
            let n = values.len() as $wide;
            Some(from(if op == ReduceOp::Avg && values.len() > 1 { wide / n } else { wide }))
        }
    };
}

integers! { i8 => I8, u8 => U8, i32 => I32, u32 => U32, i64 => I64, u64 => U64 }

floats! {
    f16 => F16, f32, f16::to_f32, f16::from_f32;
    bf16 => BF16, f32, bf16::to_f32, bf16::from_f32;
    f32 => F32, f32, |x| x, |x| x;
    f64 => F64, f64, |x| x, |x| x;
    F8E4M3 => F8E4M3, f32, |x: F8E4M3| x.to_f32(), F8E4M3::from_f32, rounds_once;
    F8E5M2 => F8E5M2, f32, |x: F8E5M2| x.to_f32(), F8E5M2::from_f32, rounds_once;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sizes_match_rust_types() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        assert_eq!(DType::F16.size(), size_of::<f16>());
        assert_eq!(DType::BF16.size(), size_of::<bf16>());
        assert_eq!(<u64 as Element>::DTYPE.size(), 8);
        assert_eq!(DType::from_name("f128"), None);
    }
}
