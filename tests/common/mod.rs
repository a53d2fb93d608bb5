//! Shared helpers of the end-to-end tests: exact value patterns per dtype and op, and goldens
//! computed directly on the host with the device's semantics (`Element::combine`).

#![allow(dead_code)]

/// Calls `$f::<T>($args)` with `T` the Rust type of `$dtype` (a `pld::DType`).
#[allow(unused_macros)] // not every test binary dispatches on dtypes
macro_rules! with_dtype {
    ($dtype:expr, $f:ident($($arg:expr),*)) => {
        match $dtype {
            pld::DType::I8 => $f::<i8>($($arg),*),
            pld::DType::U8 => $f::<u8>($($arg),*),
            pld::DType::I32 => $f::<i32>($($arg),*),
            pld::DType::U32 => $f::<u32>($($arg),*),
            pld::DType::I64 => $f::<i64>($($arg),*),
            pld::DType::U64 => $f::<u64>($($arg),*),
            pld::DType::F16 => $f::<pld::f16>($($arg),*),
            pld::DType::BF16 => $f::<pld::bf16>($($arg),*),
            pld::DType::F32 => $f::<f32>($($arg),*),
            pld::DType::F64 => $f::<f64>($($arg),*),
            pld::DType::F8E4M3 => $f::<pld::f8e4m3>($($arg),*),
            pld::DType::F8E5M2 => $f::<pld::f8e5m2>($($arg),*),
        }
    };
}

pub mod checks;
pub mod groups;
pub mod sites;
pub mod soak;

use pld::{Element, Host, ReduceOp, Window, bf16, f8e4m3, f8e5m2, f16};

/// The axes every collective is exercised over.
pub const RANKS: [usize; 6] = [1, 2, 3, 4, 5, 8];
/// Every rank count from 1 to 8, for the sweeps that cycle rank counts against other axes.
pub const ALL_RANKS: [usize; 8] = [1, 2, 3, 4, 5, 6, 7, 8];
pub const COUNTS: [usize; 8] = [1, 7, 255, 256, 257, 4097, 65537, 1 << 20];

/// An element type the tests can make exact values of and reduce on the host.
pub trait TestElem: Element + Copy {
    /// `v` as this type (wrapping for integers; exact for the small values the tests use).
    fn from_i64(v: i64) -> Self;
    /// Whether negative values are representable.
    const SIGNED: bool;
}

macro_rules! int_elem {
    ($($t:ty: $signed:expr),*) => {$(
        impl TestElem for $t {
            fn from_i64(v: i64) -> Self { v as $t }
            const SIGNED: bool = $signed;
        }
    )*};
}
int_elem!(i8: true, u8: false, i32: true, u32: false, i64: true, u64: false);

macro_rules! float_elem {
    ($($t:ty: $from:expr);*) => {$(
        impl TestElem for $t {
            fn from_i64(v: i64) -> Self { $from(v) }
            const SIGNED: bool = true;
        }
    )*};
}
float_elem!(
    f32: |v: i64| v as f32;
    f64: |v: i64| v as f64;
    f16: |v: i64| f16::from_f64(v as f64);
    bf16: |v: i64| bf16::from_f64(v as f64);
    f8e4m3: |v: i64| f8e4m3::from_f64(v as f64);
    f8e5m2: |v: i64| f8e5m2::from_f64(v as f64)
);

/// An exact input value for rank `r`, round `k`, element `i`: small integers, so every
/// reduction order gives identical bits in every dtype (products stay powers of two times ±1
/// for floats; integers wrap identically on host and device). In fp8 every input is exact
/// and every partial sum exact in f32, where fp8 accumulates; the final rounding to 8 bits
/// (sums above 16 in e4m3, 8 in e5m2 are not all representable) is checked against the
/// reference's one rounding.
pub fn value<T: TestElem>(op: ReduceOp, r: usize, k: usize, i: usize) -> T {
    let v = match op {
        ReduceOp::Prod if T::SIGNED => [1, 2, -1][(r + 2 * i + k) % 3],
        ReduceOp::Prod => [1, 2, 3][(r + 2 * i + k) % 3],
        _ => {
            let v = ((r * 7 + i * 3 + k * 5 + 1) % 13) as i64;
            if T::SIGNED { v - 6 } else { v }
        }
    };
    T::from_i64(v)
}

/// `n` input values of rank `r` in round `k`.
pub fn inputs<T: TestElem>(op: ReduceOp, r: usize, k: usize, n: usize) -> Vec<T> {
    (0..n).map(|i| value(op, r, k, i)).collect()
}

/// The reduction over ranks `0..nranks` of `inputs(op, r, k, n)`, element-wise, in rank order.
pub fn reduced<T: TestElem>(op: ReduceOp, nranks: usize, k: usize, n: usize) -> Vec<T> {
    (0..n)
        .map(|i| {
            let column: Vec<T> = (0..nranks).map(|r| value(op, r, k, i)).collect();
            T::reduce_in_rank_order(op, &column).expect("at least one rank")
        })
        .collect()
}

/// Asserts every cell of `signal` is zero on every rank (the self-clearing protocol).
pub fn assert_signal_clear(host: &Host<'_>, signal: &Window<'_, i32>, context: &str) {
    for r in host.ranks() {
        let cells = host.read(signal, r).expect("read signal");
        assert!(cells.iter().all(|&c| c == 0), "{context}: signal cells on rank {r} are {cells:?}");
    }
}

/// Compares element by element and names the first mismatch.
pub fn assert_same<T: TestElem>(found: &[T], expected: &[T], context: &str) {
    assert_eq!(found.len(), expected.len(), "{context}: length");
    if let Some(i) = (0..found.len()).find(|&i| found[i] != expected[i]) {
        panic!("{context}: element {i} is {:?}, expected {:?}", found[i], expected[i]);
    }
}
