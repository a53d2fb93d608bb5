//! Programs with user kernels, compiled into this crate's device binary by `build.rs`:
//! the RFC's publish / consume pattern around every collective, and an all_reduce written by
//! hand from notify / wait / remote_load (PyPTO's quickstart protocol).

/// User kernels stage each rank's input into a window, a collective runs, user kernels copy the
/// result out.
#[pld::program]
pub mod publish_consume {
    use pld::Tensor;

    /// Copies this rank's host row into its window.
    #[pld::kernel]
    pub fn publish(input: &Tensor<f32>, data: &mut DistributedTensor<f32>) {
        let t = load(input, 0, len(input));
        store(data, 0, t);
    }

    /// Copies this rank's i32 host row into its window (all_to_all_v's counts).
    #[pld::kernel]
    pub fn publish_counts(input: &Tensor<i32>, data: &mut DistributedTensor<i32>) {
        let t = load(input, 0, len(input));
        store(data, 0, t);
    }

    /// Copies this rank's window out to its host row.
    #[pld::kernel]
    pub fn consume(data: &DistributedTensor<f32>, out: &mut Tensor<f32>) {
        let t = load(data, 0, len(data));
        store(out, 0, t);
    }

    /// Copies this rank's i32 window out to its host row.
    #[pld::kernel]
    pub fn consume_counts(data: &DistributedTensor<i32>, out: &mut Tensor<i32>) {
        let t = load(data, 0, len(data));
        store(out, 0, t);
    }

    /// `inputs` and `outputs` are `[nranks, n]`.
    #[pld::host]
    pub fn all_reduce(inputs: &Tensor<f32>, outputs: &mut Tensor<f32>, ring: bool) {
        let data = window!(f32, [inputs.row(0).len()]);
        for r in ranks() {
            launch!(publish(inputs.row(r), data), device = r);
        }
        if ring {
            all_reduce!(data, mode = ring);
        } else {
            all_reduce!(data, op = sum);
        }
        for r in ranks() {
            launch!(consume(data, outputs.row_mut(r)), device = r);
        }
    }

    /// `inputs` and `outputs` are `[nranks, n]`.
    #[pld::host]
    pub fn broadcast(inputs: &Tensor<f32>, outputs: &mut Tensor<f32>, root: usize) {
        let data = window!(f32, [inputs.row(0).len()]);
        for r in ranks() {
            launch!(publish(inputs.row(r), data), device = r);
        }
        broadcast!(data, root = root);
        for r in ranks() {
            launch!(consume(data, outputs.row_mut(r)), device = r);
        }
    }

    /// `inputs` is `[nranks, n]`, `outputs` `[nranks, nranks * n]`.
    #[pld::host]
    pub fn all_gather(inputs: &Tensor<f32>, outputs: &mut Tensor<f32>) {
        let n = inputs.row(0).len();
        let local = window!(f32, [n]);
        let target = window!(f32, [world_size(), n]);
        for r in ranks() {
            launch!(publish(inputs.row(r), local), device = r);
        }
        all_gather!(local, target);
        for r in ranks() {
            launch!(consume(target, outputs.row_mut(r)), device = r);
        }
    }

    /// `inputs` and `outputs` are `[nranks, nranks * n]`.
    #[pld::host]
    pub fn reduce_scatter(inputs: &Tensor<f32>, outputs: &mut Tensor<f32>) {
        let data = window!(f32, [world_size(), inputs.row(0).len() / world_size()]);
        for r in ranks() {
            launch!(publish(inputs.row(r), data), device = r);
        }
        reduce_scatter!(data, op = max);
        for r in ranks() {
            launch!(consume(data, outputs.row_mut(r)), device = r);
        }
    }

    /// `inputs` and `outputs` are `[nranks, nranks * n]`.
    #[pld::host]
    pub fn all_to_all(inputs: &Tensor<f32>, outputs: &mut Tensor<f32>) {
        let shape = [world_size(), inputs.row(0).len() / world_size()];
        let input = window!(f32, shape);
        let target = window!(f32, shape);
        for r in ranks() {
            launch!(publish(inputs.row(r), input), device = r);
        }
        all_to_all!(input, target);
        for r in ranks() {
            launch!(consume(target, outputs.row_mut(r)), device = r);
        }
    }

    /// `inputs`/`outputs` are `[nranks, nranks * max_rows * row]`, `counts`/`received`
    /// `[nranks, nranks]`. Rows past a count keep what `outputs` held.
    #[pld::host]
    pub fn all_to_all_v(
        inputs: &Tensor<f32>,
        counts: &Tensor<i32>,
        outputs: &mut Tensor<f32>,
        received: &mut Tensor<i32>,
        max_rows: usize,
    ) {
        let rows = world_size() * max_rows;
        let shape = [rows, inputs.row(0).len() / rows];
        let input = window!(f32, shape);
        let target = window!(f32, shape);
        let send = window!(i32, [world_size()]);
        let recv = window!(i32, [world_size()]);
        for r in ranks() {
            launch!(publish(inputs.row(r), input), device = r);
            launch!(publish(outputs.row(r), target), device = r);
            launch!(publish_counts(counts.row(r), send), device = r);
        }
        all_to_all_v!(input, target, send, recv);
        for r in ranks() {
            launch!(consume(target, outputs.row_mut(r)), device = r);
            launch!(consume_counts(recv, received.row_mut(r)), device = r);
        }
    }

    /// A barrier between publishing and consuming; returns the signal's cells per rank.
    #[pld::host]
    pub fn barrier(inputs: &Tensor<f32>, outputs: &mut Tensor<f32>, cells: &mut Tensor<i32>) {
        let data = window!(f32, [inputs.row(0).len()]);
        let s = signal!();
        for r in ranks() {
            launch!(publish(inputs.row(r), data), device = r);
        }
        barrier!(s);
        for r in ranks() {
            launch!(consume(data, outputs.row_mut(r)), device = r);
            launch!(consume_counts(s, cells.row_mut(r)), device = r);
        }
    }
}

/// All-reduce written with nothing but notify / wait / remote_load, next to the builtin.
#[pld::program]
pub mod hand_rolled {
    use pld::Tensor;

    /// Sums every rank's `data` into every rank's `data` (PyPTO's quickstart protocol), leaving
    /// `signal` (one i32 cell per rank) all zero again.
    #[pld::kernel]
    pub fn all_reduce_by_hand(data: &mut DistributedTensor<f32>, signal: &DistributedTensor<i32>) {
        let me = rank();
        let n = len(data);
        // 1. Tell every peer my data is ready, and wait until every peer's is.
        for p in 0..nranks() {
            if p != me {
                notify(signal, p, me, 1, AtomicAdd);
            }
        }
        for p in 0..nranks() {
            if p != me {
                wait(signal, p, 1, Ge);
            }
        }
        // 2. Reduce every rank's data in rank order, as the builtin does: the same bits.
        let acc = remote_load(data, 0, 0, n);
        for p in 1..nranks() {
            let peer = remote_load(data, p, 0, n);
            for i in 0..n {
                acc[i] += peer[i];
            }
        }
        // 3. Tell every peer I am done reading its data, and wait until every peer is done
        //    reading mine: only then may it change.
        for p in 0..nranks() {
            if p != me {
                notify(signal, p, me, 1, AtomicAdd);
            }
        }
        for p in 0..nranks() {
            if p != me {
                wait(signal, p, 2, Ge);
            }
        }
        store(data, 0, acc);
        // 4. Take back the two credits each peer gave: the signal is zero for the next call.
        for p in 0..nranks() {
            if p != me {
                notify(signal, me, p, -2, AtomicAdd);
            }
        }
    }

    /// Runs the hand-rolled all_reduce on each `[nranks, n]` input in turn (one signal for all
    /// rounds); returns rank by rank results per round and the signal cells after the last.
    #[pld::host]
    pub fn by_hand(rounds: &[Tensor<f32>]) -> (Vec<Vec<Vec<f32>>>, Vec<i32>) {
        let n = rounds[0].row(0).len();
        let data = window!(f32, [n]);
        let signal = window!(i32, [world_size()]);
        let mut results = Vec::new();
        for input in rounds {
            for r in ranks() {
                stage_in!(data, r, input.row(r));
            }
            for r in ranks() {
                launch!(all_reduce_by_hand(data, signal), device = r);
            }
            let mut round = Vec::new();
            for r in ranks() {
                let mut out = vec![0.0; n];
                stage_out!(data, r, out);
                round.push(out);
            }
            results.push(round);
        }
        let mut cells = Vec::new();
        for r in ranks() {
            let mut row = vec![0; world_size()];
            stage_out!(signal, r, row);
            cells.extend(row);
        }
        (results, cells)
    }

    /// The same rounds through `all_reduce!`.
    #[pld::host]
    pub fn builtin(rounds: &[Tensor<f32>]) -> Vec<Vec<Vec<f32>>> {
        let n = rounds[0].row(0).len();
        let data = window!(f32, [n]);
        let mut results = Vec::new();
        for input in rounds {
            for r in ranks() {
                stage_in!(data, r, input.row(r));
            }
            all_reduce!(data);
            let mut round = Vec::new();
            for r in ranks() {
                let mut out = vec![0.0; n];
                stage_out!(data, r, out);
                round.push(out);
            }
            results.push(round);
        }
        results
    }
}

/// Waits that take their time: one kernel waits twice on credits another rank's kernels give
/// with pauses between them (every wait has its own deadline, not the kernel as a whole).
#[pld::program]
pub mod slow_credits {
    /// Waits for a first credit from rank 1 in cell 1, then a second; leaves the cell zero.
    #[pld::kernel]
    pub fn wait_twice(signal: &DistributedTensor<i32>) {
        wait(signal, 1, 1, Ge);
        wait(signal, 1, 2, Ge);
        notify(signal, rank(), 1, -2, AtomicAdd);
    }

    /// Gives rank 0 one credit in cell 1.
    #[pld::kernel]
    pub fn credit(signal: &DistributedTensor<i32>) {
        notify(signal, 0, 1, 1, AtomicAdd);
    }

    /// Rank 0 waits for `credits` credits (at most 2 arrive) from rank 1, which gives one after
    /// each pause of `pause_ms`.
    #[pld::host]
    pub fn paused(pause_ms: u64, credits: usize) {
        let signal = window!(i32, [world_size()]);
        launch!(wait_twice(signal), device = 0);
        for _ in 0..credits {
            std::thread::sleep(std::time::Duration::from_millis(pause_ms));
            launch!(credit(signal), device = 1);
        }
    }
}

/// Each host function makes one DSL collective fail at run time (`demo/tests/call_sites.rs`):
/// the error must name the macro's own line and column, not the `#[pld::program]` line.
#[pld::program]
pub mod call_sites {
    /// Waits for a notify into cell 0 that never comes: holds its rank until the deadline.
    #[pld::kernel]
    pub fn stuck(signal: &DistributedTensor<i32>) {
        wait(signal, 0, 1, Ge);
    }

    /// A ring over more ranks than the world has.
    #[pld::host]
    pub fn all_reduce_too_many_ranks() {
        let data = window!(f32, [8]);
        all_reduce!(data, mode = ring, nranks = 3);
    }

    /// A target that is not `[nranks, n]`.
    #[pld::host]
    pub fn all_gather_short_target() {
        let local = window!(f32, [8]);
        let short = window!(f32, [1, 8]);
        all_gather!(local, short);
    }

    /// A window that does not split into one block per rank.
    #[pld::host]
    pub fn reduce_scatter_uneven() {
        let data = window!(f32, [9]);
        reduce_scatter!(data, op = max);
    }

    /// A root past the last rank, known at run time only.
    #[pld::host]
    pub fn broadcast_root_out_of_range(root: usize) {
        let data = window!(f32, [8]);
        broadcast!(data, root = root);
    }

    /// A target of another size than the input.
    #[pld::host]
    pub fn all_to_all_mismatched() {
        let input = window!(f32, [2, 4]);
        let target = window!(f32, [2, 5]);
        all_to_all!(input, target);
    }

    /// A send count above the rows each peer block holds (checked on the device).
    #[pld::host]
    pub fn all_to_all_v_count_too_large() {
        let input = window!(f32, [2, 1, 4]);
        let target = window!(f32, [2, 1, 4]);
        let send = window!(i32, [world_size()]);
        let recv = window!(i32, [world_size()]);
        for r in ranks() {
            stage_in!(send, r, vec![5i32; world_size()]);
        }
        all_to_all_v!(input, target, send, recv);
    }

    /// Reads 8 elements from element 4 of its window, whatever the window's length.
    #[pld::kernel]
    pub fn overrun(data: &mut DistributedTensor<f32>) {
        let t = load(data, 4, 8);
        store(data, 0, t);
    }

    /// A kernel that reads past the end of a 10-element window.
    #[pld::host]
    pub fn kernel_out_of_bounds() {
        let data = window!(f32, [10]);
        launch!(overrun(data), device = 1);
    }

    /// Rank 1 is held in a kernel; rank 0's barrier times out.
    #[pld::host]
    pub fn barrier_with_a_rank_held() {
        let signal = window!(i32, [world_size()]);
        launch!(stuck(signal), device = 1);
        barrier!();
    }
}
