//! Collectives on plain host tensors (`all_reduce!(t)` with `t: pld::Tensor` of one row per
//! rank): the window, staging in and staging out happen for the caller, and the results equal
//! the window form's, bit for bit, for every collective that takes a tensor operand.

use pld::{Tensor, World};

#[pld::program]
mod tensors {
    use pld::Tensor;

    /// all_reduce on a `&mut Tensor` parameter, three times.
    #[pld::host]
    pub fn sum_rows(t: &mut Tensor<f32>) {
        for _ in 0..3 {
            all_reduce!(t, op = sum);
        }
    }

    /// The same through windows, for comparison.
    #[pld::host]
    pub fn sum_rows_by_window(t: &mut Tensor<f32>) {
        let w = window!(f32, [t.row(0).len()]);
        for r in ranks() {
            stage_in!(w, r, t.row(r));
        }
        for _ in 0..3 {
            all_reduce!(w, op = sum);
        }
        for r in ranks() {
            stage_out!(w, r, t.row_mut(r));
        }
    }

    /// An owned tensor made in the host function: broadcast from the last rank, then reduce.
    #[pld::host]
    pub fn owned() -> Tensor<i64> {
        let n = world_size();
        let mut t = Tensor::from_fn([n, 3], |[r, i]| (10 * r + i) as i64);
        broadcast!(t, root = n - 1);
        reduce!(t, root = 0, op = max);
        t
    }

    /// all_gather from a read-only tensor into a writable one, and a ring of send!/recv! that
    /// sends a tensor (a receive takes a window: see the trybuild case).
    #[pld::host]
    pub fn gather_and_pass(local: &Tensor<u8>, all: &mut Tensor<u8>, inbox: &mut Tensor<u8>) {
        let n = world_size();
        all_gather!(local, all);
        let w = window!(u8, [2]);
        for r in ranks() {
            send!(local, to = (r + 1) % n, from = r);
        }
        for r in ranks() {
            recv!(w, from = (r + n - 1) % n, to = r);
        }
        for r in ranks() {
            stage_out!(w, r, inbox.row_mut(r));
        }
    }
}

#[test]
fn a_tensor_operand_is_the_window_form_without_the_staging() {
    for n in [1, 2, 3, 4] {
        let world = World::local(n).unwrap();
        let program = tensors::load(&world).unwrap();
        let start = Tensor::<f32>::from_fn([n, 5], |[r, i]| (r as f32 + 0.25) * (i as f32 - 2.0));
        let (mut a, mut b) = (start.clone(), start.clone());
        program.sum_rows(&mut a).unwrap();
        program.sum_rows_by_window(&mut b).unwrap();
        assert_eq!(a, b, "{n} ranks");
        let column: f32 = (0..n).map(|r| (r as f32 + 0.25) * -2.0).sum::<f32>();
        assert_eq!(a.row(0)[0], column * (n * n) as f32, "{n} ranks: three sums");

        let owned = program.owned().unwrap();
        for r in 0..n {
            let last = (10 * (n - 1)) as i64;
            assert_eq!(owned.row(r), &[last, last + 1, last + 2], "{n} ranks, rank {r}");
        }

        let local = Tensor::<u8>::from_fn([n, 2], |[r, i]| (10 * r + i) as u8);
        let mut all = Tensor::<u8>::zeros([n, 2 * n]);
        let mut inbox = Tensor::<u8>::zeros([n, 2]);
        program.gather_and_pass(&local, &mut all, &mut inbox).unwrap();
        for r in 0..n {
            assert_eq!(all.row(r), local.as_slice(), "{n} ranks: all_gather on rank {r}");
            assert_eq!(inbox.row(r), local.row((r + n - 1) % n), "{n} ranks: ring on rank {r}");
        }
    }
}

#[test]
fn a_tensor_without_a_row_per_rank_is_an_error_naming_it() {
    let world = World::local(3).unwrap();
    let mut t = Tensor::<f32>::zeros([2, 4]);
    let err = tensors::load(&world).unwrap().sum_rows(&mut t).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("`t`") && message.contains("one row per rank: [3, ...]"), "{message}");
}
