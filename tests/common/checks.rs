//! Every collective checked against a direct host reference on a given host: random input
//! values (exact under every op in any reduction order), the result on every rank, and the
//! signal all zero afterwards. Shared by the property tests and the soak.

use super::{TestElem, assert_same, assert_signal_clear};
use pld::{
    AllReduce, AllReduceMode, Broadcast, Host, Opts, RecvFrom, Reduce, ReduceOp, ReduceScatter, Rooted, SendTo, Window,
};

/// splitmix64: the random input values of one case, from its seed.
pub struct Values(pub u64);

impl Values {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `n` values exact under `op` in any order: products of ±1 and 2 (at most 2^8 over 8
    /// ranks), small sums otherwise (integers: any value, arithmetic wraps alike everywhere).
    pub fn take<T: TestElem>(&mut self, op: ReduceOp, n: usize) -> Vec<T> {
        (0..n)
            .map(|_| {
                let r = self.next();
                let v = match op {
                    ReduceOp::Prod if T::SIGNED => [1, 2, -1][(r % 3) as usize],
                    ReduceOp::Prod => [1, 2][(r % 2) as usize],
                    _ if T::SIGNED => (r % 33) as i64 - 16,
                    _ => (r % 33) as i64,
                };
                T::from_i64(v)
            })
            .collect()
    }
}

/// Element-wise reduction of every rank's input, in rank order.
fn reference<T: TestElem>(op: ReduceOp, inputs: &[Vec<T>]) -> Vec<T> {
    (0..inputs[0].len())
        .map(|i| {
            let column: Vec<T> = inputs.iter().map(|x| x[i]).collect();
            T::reduce_in_rank_order(op, &column).expect("at least one rank")
        })
        .collect()
}

fn write_all<T: TestElem>(host: &Host<'_>, window: &Window<'_, T>, inputs: &[Vec<T>]) {
    for r in host.ranks() {
        host.write(window, r, &inputs[r]).unwrap();
    }
}

pub fn all_reduce<T: TestElem>(host: &Host<'_>, count: usize, op: ReduceOp, mode: AllReduceMode, seed: u64) {
    let n = host.nranks();
    let data = host.window::<T>("data", [count]).unwrap();
    let signal = host.signal("signal").unwrap();
    let mut values = Values(seed);
    let inputs: Vec<Vec<T>> = (0..n).map(|_| values.take(op, count)).collect();
    write_all(host, &data, &inputs);
    host.all_reduce(&data, AllReduce::mesh().mode(mode).op(op).signal(&signal)).unwrap();
    let expected = reference(op, &inputs);
    for r in host.ranks() {
        assert_same(&host.read(&data, r).unwrap(), &expected, &format!("rank {r}"));
    }
    assert_signal_clear(host, &signal, "all_reduce");
}

pub fn reduce_scatter<T: TestElem>(host: &Host<'_>, row: usize, op: ReduceOp, seed: u64) {
    let n = host.nranks();
    let data = host.window::<T>("data", [n, row]).unwrap();
    let signal = host.signal("signal").unwrap();
    let mut values = Values(seed);
    let inputs: Vec<Vec<T>> = (0..n).map(|_| values.take(op, n * row)).collect();
    write_all(host, &data, &inputs);
    host.reduce_scatter(&data, ReduceScatter::new().op(op).signal(&signal)).unwrap();
    let expected = reference(op, &inputs);
    for r in host.ranks() {
        let found = host.read(&data, r).unwrap();
        let mut want = inputs[r].clone();
        want[r * row..(r + 1) * row].copy_from_slice(&expected[r * row..(r + 1) * row]);
        assert_same(&found, &want, &format!("rank {r}"));
    }
    assert_signal_clear(host, &signal, "reduce_scatter");
}

pub fn broadcast<T: TestElem>(host: &Host<'_>, count: usize, root: usize, seed: u64) {
    let n = host.nranks();
    let data = host.window::<T>("data", [count]).unwrap();
    let signal = host.signal("signal").unwrap();
    let mut values = Values(seed);
    let inputs: Vec<Vec<T>> = (0..n).map(|_| values.take(ReduceOp::Sum, count)).collect();
    write_all(host, &data, &inputs);
    host.broadcast(&data, Broadcast::root(root as i64).signal(&signal)).unwrap();
    for r in host.ranks() {
        assert_same(&host.read(&data, r).unwrap(), &inputs[root], &format!("rank {r}"));
    }
    assert_signal_clear(host, &signal, "broadcast");
}

/// reduce to `root`: the root holds the reduction, every other rank its own input.
pub fn reduce<T: TestElem>(host: &Host<'_>, count: usize, op: ReduceOp, root: usize, seed: u64) {
    let n = host.nranks();
    let data = host.window::<T>("data", [count]).unwrap();
    let signal = host.signal("signal").unwrap();
    let mut values = Values(seed);
    let inputs: Vec<Vec<T>> = (0..n).map(|_| values.take(op, count)).collect();
    write_all(host, &data, &inputs);
    host.reduce(&data, Reduce::root(root as i64).op(op).signal(&signal)).unwrap();
    let expected = reference(op, &inputs);
    for r in host.ranks() {
        let expected = if r == root { &expected } else { &inputs[r] };
        assert_same(&host.read(&data, r).unwrap(), expected, &format!("reduce to {root}: rank {r}"));
    }
    assert_signal_clear(host, &signal, "reduce");
}

/// gather to `root`: the root's target holds every rank's row, the others' stay as they were.
pub fn gather<T: TestElem>(host: &Host<'_>, count: usize, root: usize, seed: u64) {
    let n = host.nranks();
    let local = host.window::<T>("local", [count]).unwrap();
    let target = host.window::<T>("target", [n, count]).unwrap();
    let signal = host.signal("signal").unwrap();
    let mut values = Values(seed);
    let inputs: Vec<Vec<T>> = (0..n).map(|_| values.take(ReduceOp::Sum, count)).collect();
    let before: Vec<Vec<T>> = (0..n).map(|_| values.take(ReduceOp::Sum, n * count)).collect();
    write_all(host, &local, &inputs);
    write_all(host, &target, &before);
    host.gather(&local, &target, Rooted::root(root as i64).signal(&signal)).unwrap();
    let expected = inputs.concat();
    for r in host.ranks() {
        let expected = if r == root { &expected } else { &before[r] };
        assert_same(&host.read(&target, r).unwrap(), expected, &format!("gather to {root}: rank {r}"));
    }
    assert_signal_clear(host, &signal, "gather");
}

/// scatter from `root`: every rank's target holds its row of the root's input.
pub fn scatter<T: TestElem>(host: &Host<'_>, count: usize, root: usize, seed: u64) {
    let n = host.nranks();
    let input = host.window::<T>("input", [n, count]).unwrap();
    let target = host.window::<T>("target", [count]).unwrap();
    let signal = host.signal("signal").unwrap();
    let mut values = Values(seed);
    let inputs: Vec<Vec<T>> = (0..n).map(|_| values.take(ReduceOp::Sum, n * count)).collect();
    write_all(host, &input, &inputs);
    host.scatter(&input, &target, Rooted::root(root as i64).signal(&signal)).unwrap();
    for r in host.ranks() {
        let expected = &inputs[root][r * count..(r + 1) * count];
        assert_same(&host.read(&target, r).unwrap(), expected, &format!("scatter from {root}: rank {r}"));
    }
    assert_signal_clear(host, &signal, "scatter");
}

/// all_gather_v: rank s sends `counts[s]` rows of `width` (at most `max_rows`); block p of every
/// target holds p's rows and, past them, what it held before; every rank learns every count.
pub fn all_gather_v<T: TestElem>(host: &Host<'_>, max_rows: usize, width: usize, counts: &[usize], seed: u64) {
    let n = host.nranks();
    let local = host.window::<T>("local", [max_rows, width]).unwrap();
    let target = host.window::<T>("target", [n * max_rows, width]).unwrap();
    let count_cells = host.window::<i32>("counts", [n]).unwrap();
    let signal = host.signal("signal").unwrap();
    let mut values = Values(seed);
    let inputs: Vec<Vec<T>> = (0..n).map(|_| values.take(ReduceOp::Sum, max_rows * width)).collect();
    let before: Vec<Vec<T>> = (0..n).map(|_| values.take(ReduceOp::Sum, n * max_rows * width)).collect();
    write_all(host, &local, &inputs);
    write_all(host, &target, &before);
    for r in host.ranks() {
        // Only the own entry is read; the others hold garbage the call replaces.
        let cells: Vec<i32> = (0..n).map(|p| if p == r { counts[r] as i32 } else { -99 }).collect();
        host.write(&count_cells, r, &cells).unwrap();
    }
    host.all_gather_v(&local, &target, &count_cells, Opts::new().signal(&signal)).unwrap();
    let block = max_rows * width;
    for r in host.ranks() {
        let mut expected = before[r].clone();
        for p in 0..n {
            let sent = counts[p] * width;
            expected[p * block..p * block + sent].copy_from_slice(&inputs[p][..sent]);
        }
        assert_same(&host.read(&target, r).unwrap(), &expected, &format!("all_gather_v: rank {r}"));
        let seen: Vec<i32> = counts.iter().map(|&c| c as i32).collect();
        assert_eq!(host.read(&count_cells, r).unwrap(), seen, "all_gather_v: rank {r}'s counts");
    }
    assert_signal_clear(host, &signal, "all_gather_v");
}

pub fn all_gather<T: TestElem>(host: &Host<'_>, count: usize, seed: u64) {
    let n = host.nranks();
    let local = host.window::<T>("local", [count]).unwrap();
    let target = host.window::<T>("target", [n, count]).unwrap();
    let signal = host.signal("signal").unwrap();
    let mut values = Values(seed);
    let inputs: Vec<Vec<T>> = (0..n).map(|_| values.take(ReduceOp::Sum, count)).collect();
    write_all(host, &local, &inputs);
    host.all_gather(&local, &target, Opts::new().signal(&signal)).unwrap();
    let expected = inputs.concat();
    for r in host.ranks() {
        assert_same(&host.read(&target, r).unwrap(), &expected, &format!("rank {r}"));
    }
    assert_signal_clear(host, &signal, "all_gather");
}

pub fn all_to_all<T: TestElem>(host: &Host<'_>, row: usize, seed: u64) {
    let n = host.nranks();
    let input = host.window::<T>("input", [n, row]).unwrap();
    let target = host.window::<T>("target", [n, row]).unwrap();
    let signal = host.signal("signal").unwrap();
    let mut values = Values(seed);
    let inputs: Vec<Vec<T>> = (0..n).map(|_| values.take(ReduceOp::Sum, n * row)).collect();
    write_all(host, &input, &inputs);
    host.all_to_all(&input, &target, Opts::new().signal(&signal)).unwrap();
    for r in host.ranks() {
        let expected: Vec<T> = (0..n).flat_map(|p| inputs[p][r * row..(r + 1) * row].to_vec()).collect();
        assert_same(&host.read(&target, r).unwrap(), &expected, &format!("rank {r}"));
    }
    assert_signal_clear(host, &signal, "all_to_all");
}

/// `counts[s][d]`: rows rank `s` sends rank `d`, each at most `max_rows`.
pub fn all_to_all_v<T: TestElem>(host: &Host<'_>, max_rows: usize, width: usize, counts: &[Vec<usize>], seed: u64) {
    let n = host.nranks();
    let input = host.window::<T>("input", [n * max_rows, width]).unwrap();
    let target = host.window::<T>("target", [n * max_rows, width]).unwrap();
    let send = host.window::<i32>("send_counts", [n]).unwrap();
    let recv = host.window::<i32>("recv_counts", [n]).unwrap();
    let signal = host.signal("signal").unwrap();
    let mut values = Values(seed);
    let block = max_rows * width;
    let inputs: Vec<Vec<T>> = (0..n).map(|_| values.take(ReduceOp::Sum, n * block)).collect();
    let before: Vec<Vec<T>> = (0..n).map(|_| values.take(ReduceOp::Sum, n * block)).collect();
    write_all(host, &input, &inputs);
    write_all(host, &target, &before);
    for s in host.ranks() {
        let row = &counts[s];
        host.write(&send, s, &row.iter().map(|&c| c as i32).collect::<Vec<_>>()).unwrap();
    }
    host.all_to_all_v(&input, &target, &send, &recv, Opts::new().signal(&signal)).unwrap();
    for r in host.ranks() {
        let mut expected = before[r].clone();
        for p in 0..n {
            let rows = counts[p][r] * width;
            expected[p * block..p * block + rows].copy_from_slice(&inputs[p][r * block..r * block + rows]);
        }
        assert_same(&host.read(&target, r).unwrap(), &expected, &format!("rank {r}"));
        let received: Vec<i32> = (0..n).map(|p| counts[p][r] as i32).collect();
        assert_eq!(host.read(&recv, r).unwrap(), received, "recv_counts of rank {r}");
    }
    assert_signal_clear(host, &signal, "all_to_all_v");
}

/// A ring exchange by send/recv, `rounds` back to back: every rank sends `out` to the next rank
/// before it receives `inbox` from the previous one; each round's inbox holds the previous
/// rank's values and `out` is unchanged. One rank sends to itself.
pub fn ring_exchange<T: TestElem>(host: &Host<'_>, count: usize, rounds: usize, seed: u64) {
    let n = host.nranks();
    let out = host.window::<T>("out", [count]).unwrap();
    let inbox = host.window::<T>("inbox", [count]).unwrap();
    for round in 0..rounds as u64 {
        let mut values = Values(seed.wrapping_mul(31).wrapping_add(round));
        let inputs: Vec<Vec<T>> = (0..n).map(|_| values.take(ReduceOp::Sum, count)).collect();
        write_all(host, &out, &inputs);
        for r in host.ranks() {
            host.send(&out, SendTo::rank(((r + 1) % n) as i64).from(r as i64)).unwrap();
        }
        for r in host.ranks() {
            host.recv(&inbox, RecvFrom::rank(((r + n - 1) % n) as i64).to(r as i64)).unwrap();
        }
        for r in host.ranks() {
            let context = format!("ring exchange of {count} x {} at {n} ranks, round {round}: rank {r}", T::DTYPE);
            assert_same(&host.read(&inbox, r).unwrap(), &inputs[(r + n - 1) % n], &context);
            assert_same(&host.read(&out, r).unwrap(), &inputs[r], &format!("{context} (its send buffer)"));
        }
    }
}
