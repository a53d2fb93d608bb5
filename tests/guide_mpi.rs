//! The guide's examples, unchanged (`tests/guide_blocks/mod.rs` is generated from the guide's
//! `rust` blocks and checked against them by `tests/guide.rs`), run one per process:
//! `.ci/run` starts `mpirun -np 4 <this binary> <name>` for each block, so every example runs
//! as a 4-process MPI job, each process driving its own rank (MPI starts once per process, so
//! one block a job). `--list` names the blocks; without an argument (as `cargo test` runs it)
//! every block runs in turn on the local launcher.

#[rustfmt::skip]
mod guide_blocks;

fn main() {
    let which = std::env::args().nth(1);
    let blocks = guide_blocks::BLOCKS;
    let selected: Vec<_> = match which.as_deref() {
        Some("--list") => {
            for (name, _) in blocks {
                println!("{name}");
            }
            return;
        }
        None => blocks.iter().collect(),
        Some(name) => blocks.iter().filter(|(n, _)| *n == name).collect(),
    };
    if selected.is_empty() {
        eprintln!("no guide block named `{}`", which.unwrap_or_default());
        std::process::exit(2);
    }
    for (name, block) in selected {
        if let Err(err) = block() {
            eprintln!("guide block {name}: {err}");
            std::process::exit(1);
        }
        println!("guide block {name}: ok");
    }
}
