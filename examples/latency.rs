//! Small-message latency of barrier and all_reduce at a given rank count, to check that waits
//! survive oversubscription (more ranks than cores): milliseconds would mean a spinning wait.
//!
//! `cargo run --release --example latency -- 8`

use std::time::Instant;

use pld::prelude::*;

fn main() -> pld::Result<()> {
    let nranks: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(8);
    let iters = 2000;
    let world = World::local(nranks)?;
    let host = world.host()?;
    let signal = host.signal("sig")?;
    let data = host.window::<f32>("data", [2])?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("{nranks} ranks on {cpus} cpus, {iters} calls each, queued then synchronised once");
    let calls: [(&str, &dyn Fn() -> pld::Result<()>); 3] = [
        ("barrier", &|| host.barrier(Opts::new().signal(&signal))),
        ("all_reduce mesh 8 B", &|| host.all_reduce(&data, AllReduce::mesh().signal(&signal))),
        ("all_reduce ring 8 B", &|| host.all_reduce(&data, AllReduce::ring().signal(&signal))),
    ];
    for (name, call) in calls {
        call()?;
        host.sync()?;
        let start = Instant::now();
        for _ in 0..iters {
            call()?;
        }
        host.sync()?;
        let per_call = start.elapsed().as_secs_f64() * 1e6 / iters as f64;
        println!("{name:>22}: {per_call:8.2} us per call");
    }
    Ok(())
}
