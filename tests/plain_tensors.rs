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

/// The other collectives on tensors: the block collectives (reduce_scatter, all_gather_v), the
/// rooted ones (gather into a tensor a scatter then reads) and a group.
#[pld::program]
mod more_tensors {
    use pld::Tensor;

    /// reduce_scatter of `[n, n, k]` rows, then gather `local` into `gathered` at `root` and
    /// scatter it back out into `mine`.
    #[pld::host]
    pub fn blocks_and_roots(
        rows: &mut Tensor<i32>,
        local: &Tensor<i32>,
        gathered: &mut Tensor<i32>,
        mine: &mut Tensor<i32>,
        root: usize,
    ) {
        reduce_scatter!(rows, op = max);
        gather!(local, gathered, root = root);
        scatter!(gathered, mine, root = root);
    }

    /// all_gather_v of up to 2 rows each, the counts learned into `counts`.
    #[pld::host]
    pub fn varying(local: &Tensor<f64>, target: &mut Tensor<f64>, counts: &mut Tensor<i32>) {
        all_gather_v!(local, target, counts);
    }

    /// all_reduce over the group {2, 0}: the other ranks' rows stay as they were.
    #[pld::host]
    pub fn in_group(t: &mut Tensor<u8>) {
        all_reduce!(t, group = [2, 0]);
    }
}

#[test]
fn every_kind_of_collective_takes_tensors() {
    for n in 1..=5 {
        let world = World::local(n).unwrap();
        let program = more_tensors::load(&world).unwrap();
        let k = 3;
        let mut rows = Tensor::<i32>::from_fn([n, n, k], |[r, p, i]| (r * 7 + p * 3 + i) as i32);
        let before = rows.clone();
        let local = Tensor::<i32>::from_fn([n, k], |[r, i]| (100 * r + i) as i32);
        let mut gathered = Tensor::<i32>::from_fn([n, n, k], |_| -1);
        let mut mine = Tensor::<i32>::zeros([n, k]);
        let root = n.div_ceil(2) % n; // the middle rank, or 0 alone
        program.blocks_and_roots(&mut rows, &local, &mut gathered, &mut mine, root).unwrap();
        for r in 0..n {
            let mut want = before.row(r).to_vec();
            for i in 0..k {
                want[r * k + i] = ((n - 1) * 7 + r * 3 + i) as i32;
            }
            assert_eq!(rows.row(r), want.as_slice(), "{n} ranks: reduce_scatter on rank {r}");
            let gathered_want: Vec<i32> = if r == root { local.as_slice().to_vec() } else { vec![-1; n * k] };
            assert_eq!(gathered.row(r), gathered_want.as_slice(), "{n} ranks: gather on rank {r}");
            assert_eq!(mine.row(r), local.row(r), "{n} ranks: scatter on rank {r}");
        }

        let sent = |r: usize| r % 3;
        let local = Tensor::<f64>::from_fn([n, 2, k], |[r, j, i]| (r * 10 + j * 3 + i) as f64 + 0.5);
        let mut target = Tensor::<f64>::from_fn([n, 2 * n, k], |_| -2.0);
        let mut counts = Tensor::<i32>::from_fn([n, n], |[r, p]| if r == p { sent(r) as i32 } else { -1 });
        program.varying(&local, &mut target, &mut counts).unwrap();
        for r in 0..n {
            let want: Vec<f64> = (0..n)
                .flat_map(|p| {
                    let block = local.row(p);
                    (0..2 * k).map(move |e| if e < sent(p) * k { block[e] } else { -2.0 })
                })
                .collect();
            assert_eq!(target.row(r), want.as_slice(), "{n} ranks: all_gather_v on rank {r}");
            let counts_want: Vec<i32> = (0..n).map(|p| sent(p) as i32).collect();
            assert_eq!(counts.row(r), counts_want.as_slice(), "{n} ranks: counts learned on rank {r}");
        }

        if n >= 3 {
            let mut t = Tensor::<u8>::from_fn([n, 2], |[r, i]| (r * 10 + i) as u8);
            let start = t.clone();
            program.in_group(&mut t).unwrap();
            for r in 0..n {
                let want: Vec<u8> = if r == 0 || r == 2 {
                    (0..2).map(|i| start.row(0)[i] + start.row(2)[i]).collect()
                } else {
                    start.row(r).to_vec()
                };
                assert_eq!(t.row(r), want.as_slice(), "{n} ranks: group all_reduce on rank {r}");
            }
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
