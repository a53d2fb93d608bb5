//! The RFC's end-to-end suite, written with the macros: every collective at 2, 3 and 4 ranks,
//! three back-to-back rounds of distinct inputs through one call site (so one hoisted signal
//! serves all three), and a host loop of 50 iterations whose signal memory stays constant.

use pld::{Tensor, World};

const S: usize = 5;

#[pld::program]
mod suite {
    use pld::Tensor;

    pub const S: usize = super::S;

    /// Round k of input is `inputs[k]` (`[nranks, S]`); returns every rank's result per round.
    #[pld::host]
    pub fn all_reduce_mesh(inputs: &[Tensor<i32>]) -> Vec<Tensor<i32>> {
        let data = window!(i32, [S]);
        let mut results = Vec::new();
        for input in inputs {
            for r in ranks() {
                stage_in!(data, r, input.row(r));
            }
            all_reduce!(data, op = sum);
            let mut out = Tensor::zeros([world_size(), S]);
            for r in ranks() {
                stage_out!(data, r, out.row_mut(r));
            }
            results.push(out);
        }
        results
    }

    #[pld::host]
    pub fn all_reduce_ring(inputs: &[Tensor<i32>]) -> Vec<Tensor<i32>> {
        let data = window!(i32, [S]);
        let mut results = Vec::new();
        for input in inputs {
            for r in ranks() {
                stage_in!(data, r, input.row(r));
            }
            all_reduce!(data, op = max, mode = ring);
            let mut out = Tensor::zeros([world_size(), S]);
            for r in ranks() {
                stage_out!(data, r, out.row_mut(r));
            }
            results.push(out);
        }
        results
    }

    #[pld::host]
    pub fn broadcast_from(inputs: &[Tensor<i32>], root: usize) -> Vec<Tensor<i32>> {
        let data = window!(i32, [S]);
        let mut results = Vec::new();
        for input in inputs {
            for r in ranks() {
                stage_in!(data, r, input.row(r));
            }
            broadcast!(data, root = root);
            let mut out = Tensor::zeros([world_size(), S]);
            for r in ranks() {
                stage_out!(data, r, out.row_mut(r));
            }
            results.push(out);
        }
        results
    }

    /// Returns, per round, every rank's whole gathered target (`[nranks, nranks * S]`).
    #[pld::host]
    pub fn all_gather(inputs: &[Tensor<i32>]) -> Vec<Tensor<i32>> {
        let local = window!(i32, [S]);
        let target = window!(i32, [world_size(), S]);
        let mut results = Vec::new();
        for input in inputs {
            for r in ranks() {
                stage_in!(local, r, input.row(r));
            }
            all_gather!(local, target);
            let mut out = Tensor::zeros([world_size(), world_size() * S]);
            for r in ranks() {
                stage_out!(target, r, out.row_mut(r));
            }
            results.push(out);
        }
        results
    }

    /// Inputs are `[nranks, nranks * S]`: rank r's whole `[nranks, S]` window per row.
    #[pld::host]
    pub fn reduce_scatter(inputs: &[Tensor<i32>]) -> Vec<Tensor<i32>> {
        let data = window!(i32, [world_size(), S]);
        let mut results = Vec::new();
        for input in inputs {
            for r in ranks() {
                stage_in!(data, r, input.row(r));
            }
            reduce_scatter!(data, op = sum);
            let mut out = Tensor::zeros([world_size(), world_size() * S]);
            for r in ranks() {
                stage_out!(data, r, out.row_mut(r));
            }
            results.push(out);
        }
        results
    }

    #[pld::host]
    pub fn all_to_all(inputs: &[Tensor<i32>]) -> Vec<Tensor<i32>> {
        let input_window = window!(i32, [world_size(), S]);
        let target = window!(i32, [world_size(), S]);
        let mut results = Vec::new();
        for input in inputs {
            for r in ranks() {
                stage_in!(input_window, r, input.row(r));
            }
            all_to_all!(input_window, target);
            let mut out = Tensor::zeros([world_size(), world_size() * S]);
            for r in ranks() {
                stage_out!(target, r, out.row_mut(r));
            }
            results.push(out);
        }
        results
    }

    /// Blocks of 2 rows of S per peer; `counts[k]` is `[nranks, nranks]` (row r: what r sends).
    /// Returns per round every rank's (recv_counts, target).
    #[pld::host]
    pub fn all_to_all_v(inputs: &[Tensor<i32>], counts: &[Tensor<i32>]) -> Vec<(Tensor<i32>, Tensor<i32>)> {
        let n = world_size();
        let input_window = window!(i32, [n * 2, S]);
        let target = window!(i32, [n * 2, S]);
        let send = window!(i32, [n]);
        let recv = window!(i32, [n]);
        let mut results = Vec::new();
        for (input, count) in inputs.iter().zip(counts) {
            for r in ranks() {
                stage_in!(input_window, r, input.row(r));
                stage_in!(send, r, count.row(r));
                stage_in!(target, r, vec![-1; n * 2 * S]);
            }
            all_to_all_v!(input_window, target, send, recv);
            let (mut got, mut rows) = (Tensor::zeros([n, n]), Tensor::zeros([n, n * 2 * S]));
            for r in ranks() {
                stage_out!(recv, r, got.row_mut(r));
                stage_out!(target, r, rows.row_mut(r));
            }
            results.push((got, rows));
        }
        results
    }

    /// Barriers on an explicit signal; returns its cells on every rank after each round.
    #[pld::host]
    pub fn barriers(rounds: usize) -> Vec<Tensor<i32>> {
        let s = signal!();
        let mut results = Vec::new();
        for _ in 0..rounds {
            barrier!(s);
            barrier!();
            let mut cells = Tensor::zeros([world_size(), world_size()]);
            for r in ranks() {
                stage_out!(s, r, cells.row_mut(r));
            }
            results.push(cells);
        }
        results
    }

    /// A collective in a 50-iteration loop; returns the heap's live bytes at every iteration.
    #[pld::host]
    pub fn looped(world: &pld::World, iterations: usize) -> Vec<usize> {
        let data = window!(f32, [64]);
        let mut live = Vec::new();
        for _ in 0..iterations {
            all_reduce!(data, mode = ring);
            barrier!();
            live.push(world.live_window_bytes());
        }
        live
    }
}

/// Three rounds of distinct `[nranks, width]` inputs.
fn rounds(nranks: usize, width: usize) -> Vec<Tensor<i32>> {
    (0..3).map(|k| Tensor::from_fn([nranks, width], |[r, i]| (10_000 * k + 100 * r + i) as i32)).collect()
}

const RANKS: [usize; 3] = [2, 3, 4];

#[test]
fn all_reduce_mesh_and_ring() {
    for n in RANKS {
        let world = World::local(n).unwrap();
        let program = suite::load(&world).unwrap();
        let inputs = rounds(n, S);
        for (k, out) in program.all_reduce_mesh(&inputs).unwrap().iter().enumerate() {
            let sum: Vec<i32> = (0..S).map(|i| (0..n).map(|r| inputs[k].row(r)[i]).sum()).collect();
            for r in 0..n {
                assert_eq!(out.row(r), sum, "mesh, {n} ranks, round {k}, rank {r}");
            }
        }
        for (k, out) in program.all_reduce_ring(&inputs).unwrap().iter().enumerate() {
            for r in 0..n {
                assert_eq!(out.row(r), inputs[k].row(n - 1), "ring max, {n} ranks, round {k}, rank {r}");
            }
        }
    }
}

#[test]
fn broadcast_from_the_last_rank() {
    for n in RANKS {
        let world = World::local(n).unwrap();
        let inputs = rounds(n, S);
        let results = suite::load(&world).unwrap().broadcast_from(&inputs, n - 1).unwrap();
        for (k, out) in results.iter().enumerate() {
            for r in 0..n {
                assert_eq!(out.row(r), inputs[k].row(n - 1), "{n} ranks, round {k}, rank {r}");
            }
        }
    }
}

#[test]
fn all_gather_every_row_on_every_rank() {
    for n in RANKS {
        let world = World::local(n).unwrap();
        let inputs = rounds(n, S);
        for (k, out) in suite::load(&world).unwrap().all_gather(&inputs).unwrap().iter().enumerate() {
            for r in 0..n {
                assert_eq!(out.row(r), inputs[k].as_slice(), "{n} ranks, round {k}, rank {r}");
            }
        }
    }
}

#[test]
fn reduce_scatter_rows() {
    for n in RANKS {
        let world = World::local(n).unwrap();
        let inputs = rounds(n, n * S);
        for (k, out) in suite::load(&world).unwrap().reduce_scatter(&inputs).unwrap().iter().enumerate() {
            for r in 0..n {
                let mine = &out.row(r)[r * S..(r + 1) * S];
                let sum: Vec<i32> = (0..S).map(|i| (0..n).map(|p| inputs[k].row(p)[r * S + i]).sum()).collect();
                assert_eq!(mine, sum, "{n} ranks, round {k}, rank {r}");
            }
        }
    }
}

#[test]
fn all_to_all_rows() {
    for n in RANKS {
        let world = World::local(n).unwrap();
        let inputs = rounds(n, n * S);
        for (k, out) in suite::load(&world).unwrap().all_to_all(&inputs).unwrap().iter().enumerate() {
            for r in 0..n {
                for p in 0..n {
                    let got = &out.row(r)[p * S..(p + 1) * S];
                    assert_eq!(got, &inputs[k].row(p)[r * S..(r + 1) * S], "{n} ranks, round {k}, rank {r}, row {p}");
                }
            }
        }
    }
}

#[test]
fn all_to_all_v_counted_rows() {
    for n in RANKS {
        let world = World::local(n).unwrap();
        let inputs = rounds(n, n * 2 * S);
        let counts: Vec<Tensor<i32>> =
            (0..3).map(|k| Tensor::from_fn([n, n], |[r, d]| ((r + d + k) % 3) as i32)).collect();
        let results = suite::load(&world).unwrap().all_to_all_v(&inputs, &counts).unwrap();
        for (k, (got, rows)) in results.iter().enumerate() {
            for r in 0..n {
                for p in 0..n {
                    let c = counts[k].row(p)[r] as usize;
                    assert_eq!(got.row(r)[p] as usize, c, "recv count, {n} ranks, round {k}");
                    let block = &rows.row(r)[p * 2 * S..(p + 1) * 2 * S];
                    let sent = &inputs[k].row(p)[r * 2 * S..r * 2 * S + c * S];
                    assert_eq!(&block[..c * S], sent, "{n} ranks, round {k}, rank {r}, block {p}");
                    assert!(block[c * S..].iter().all(|&x| x == -1), "rows past the count moved");
                }
            }
        }
    }
}

#[test]
fn barriers_leave_their_signal_clear() {
    for n in RANKS {
        let world = World::local(n).unwrap();
        for cells in suite::load(&world).unwrap().barriers(3).unwrap() {
            assert!(cells.as_slice().iter().all(|&c| c == 0), "{n} ranks: {cells:?}");
        }
    }
}

#[test]
fn a_host_loop_keeps_signal_memory_constant() {
    let world = World::local(4).unwrap();
    let live = suite::load(&world).unwrap().looped(&world, 50).unwrap();
    assert_eq!(live.len(), 50);
    assert!(live.iter().all(|&b| b == live[0]), "live window bytes changed: {live:?}");
    assert_eq!(world.live_window_bytes(), 0, "the host scope frees its windows and signals");
}
