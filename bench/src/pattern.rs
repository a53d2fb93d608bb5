//! Exact input patterns per dtype and op, and the expected results computed on the host.

use pld::{Element, ReduceOp, bf16, f16};

/// An element type the benchmark can fill and check exactly.
pub trait BenchElem: Element + Copy {
    /// `v` as this type (wrapping for integers).
    fn from_i64(v: i64) -> Self;
    /// Largest pattern value that keeps every reduction exact.
    const PERIOD: usize;
}

macro_rules! ints {
    ($($t:ty),*) => {$(
        impl BenchElem for $t {
            fn from_i64(v: i64) -> Self { v as $t }
            const PERIOD: usize = 1024;
        }
    )*};
}
ints!(i8, u8, i32, u32, i64, u64);

macro_rules! floats {
    ($($t:ty: $period:expr, $from:expr);*) => {$(
        impl BenchElem for $t {
            fn from_i64(v: i64) -> Self { $from(v) }
            const PERIOD: usize = $period;
        }
    )*};
}
floats!(
    f32: 1024, |v: i64| v as f32;
    f64: 1024, |v: i64| v as f64;
    f16: 4, |v: i64| f16::from_f64(v as f64);
    bf16: 4, |v: i64| bf16::from_f64(v as f64);
    pld::f8e4m3: 2, |v: i64| pld::f8e4m3::from_f64(v as f64);
    pld::f8e5m2: 2, |v: i64| pld::f8e5m2::from_f64(v as f64)
);

/// Rank `r`'s input element `i` in round `k`: small integers (products stay powers of two), so
/// every order of reduction gives identical bits.
pub fn value<T: BenchElem>(op: ReduceOp, r: usize, k: usize, i: usize) -> T {
    match op {
        ReduceOp::Prod => T::from_i64([1, 2, 1][(r + i + k) % 3]),
        _ => T::from_i64(((r + 1) * ((i + k) % T::PERIOD + 1)) as i64),
    }
}

/// `n` inputs of rank `r` in round `k`.
pub fn inputs<T: BenchElem>(op: ReduceOp, r: usize, k: usize, n: usize) -> Vec<T> {
    (0..n).map(|i| value(op, r, k, i)).collect()
}

/// The reduction over `nranks` ranks of `inputs(op, r, k, n)`.
pub fn reduced<T: BenchElem>(op: ReduceOp, nranks: usize, k: usize, n: usize) -> Vec<T> {
    (0..n)
        .map(|i| {
            let column: Vec<T> = (0..nranks).map(|r| value(op, r, k, i)).collect();
            T::reduce_in_rank_order(op, &column).expect("at least one rank")
        })
        .collect()
}
