//! End to end under MPI: every collective, checked against the host reference on this process's
//! rank, over dtypes, ops, modes, roots and sizes. Run by `.ci/run` as
//! `timeout 300 mpirun --allow-run-as-root --oversubscribe -np N <this test binary>` for N in
//! {2, 3, 4}, with shared windows and with `PLD_MPI_RMA=1` (one-sided Put/Get/Accumulate); run
//! without `mpirun` it takes the local launcher (`World::from_env`), so it also runs as a plain
//! test. `PLD_E2E_FAIL_RANK=r` makes rank r panic halfway: the job must end, naming the rank.

#[macro_use]
mod common;

use common::checks::*;
use pld::{AllReduceMode, DType, ReduceOp, World};

fn main() {
    let world = World::from_env().expect("a world for this process");
    let host = world.host().expect("its host");
    let n = world.nranks();
    let fail_rank: Option<usize> = std::env::var("PLD_E2E_FAIL_RANK").ok().and_then(|r| r.parse().ok());
    let mut calls = 0;
    let mut seed = 1u64;
    for (i, dtype) in [DType::F32, DType::I32, DType::BF16, DType::U8, DType::F64, DType::I64].into_iter().enumerate() {
        if i == 3
            && let Some(fail) = fail_rank
            && host.ranks().contains(&fail)
        {
            panic!("rank {fail} fails on purpose (PLD_E2E_FAIL_RANK)");
        }
        for count in [0, 1, 1000, 70_000] {
            let op = ReduceOp::ALL[(i + count) % ReduceOp::ALL.len()];
            seed += 1;
            for mode in [AllReduceMode::Mesh, AllReduceMode::Ring] {
                with_dtype!(dtype, all_reduce(&host, count, op, mode, seed));
            }
            with_dtype!(dtype, reduce_scatter(&host, count / n, op, seed));
            with_dtype!(dtype, broadcast(&host, count, (count + i) % n, seed));
            with_dtype!(dtype, all_gather(&host, count / n, seed));
            with_dtype!(dtype, all_to_all(&host, count / (n * n), seed));
            let max_rows = 1 + count % 7;
            let counts: Vec<Vec<usize>> =
                (0..n).map(|s| (0..n).map(|d| (s + 2 * d + i) % (max_rows + 1)).collect()).collect();
            with_dtype!(dtype, all_to_all_v(&host, max_rows, 3, &counts, seed));
            calls += 7;
        }
    }
    host.barrier(pld::Opts::new()).expect("a final barrier");
    host.finish().expect("every call succeeded");
    let ranks = world.host().map(|h| h.ranks()).unwrap_or(0..0);
    println!("mpi_e2e: ranks {ranks:?} of {n}: {calls} collectives checked, 0 wrong elements");
}
