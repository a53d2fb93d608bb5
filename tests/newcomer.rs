//! A new user's crate, made the way the README says: the README's dependency lines (by path),
//! its `build.rs`, a program with a kernel launched by `launch!`, an all_reduce of 1000 f64
//! over 3 ranks, an all_gather, a broadcast from root 2, and `fn main() -> pld::Result<()>`.
//! It builds and runs; a seeded kernel mistake is one rustc diagnostic (`error: ...` then
//! `--> src/main.rs:L:C`) with no build-script panic; a seeded runtime error of a DSL collective
//! is printed by `main` as its message, naming the macro's line.
//!
//! The crate lives under `target/newcomer` and builds with a target directory of its own there
//! (kept between runs, so only the first run compiles pld's dependencies), against this
//! workspace's `Cargo.lock` so it resolves offline to the same versions.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CARGO_TOML: &str = r#"[package]
name = "myapp"
version = "0.1.0"
edition = "2024"

[dependencies]
pld = { path = "@ROOT@" }

[build-dependencies]
pld-backend = { path = "@ROOT@/pld-backend" }

[features]
mpi = ["pld/mpi"]

# Its own workspace, though it sits inside pld's target directory.
[workspace]
"#;

const BUILD_RS: &str = r#"fn main() {
    pld_backend::Build::new().file("src/main.rs").compile();
}
"#;

const MAIN_RS: &str = r#"#[pld::program]
mod app {
    /// Doubles a rank's window in place.
    #[pld::kernel]
    pub fn double(data: &mut DistributedTensor<f64>) {
        let t = load(data, 0, len(data));
        let twice = add(t, t);
        store(data, 0, twice);
    }

    #[pld::host]
    pub fn run(nranks_of_ring: usize) -> (Vec<f64>, Vec<f32>, Vec<i32>) {
        let data = window!(f64, [1000]);
        for r in ranks() {
            stage_in!(data, r, vec![r as f64 + 1.0; 1000]);
        }
        all_reduce!(data);
        for r in ranks() {
            launch!(double(data), device = r);
        }
        if nranks_of_ring > 0 {
            let ring = window!(f32, [8]);
            all_reduce!(ring, mode = ring, nranks = 4); // SEEDED RUNTIME ERROR
        }
        let local = window!(f32, [2]);
        let gathered = window!(f32, [world_size(), 2]);
        for r in ranks() {
            stage_in!(local, r, vec![r as f32; 2]);
        }
        all_gather!(local, gathered);
        let root = window!(i32, [3]);
        for r in ranks() {
            stage_in!(root, r, vec![r as i32 * 10; 3]);
        }
        broadcast!(root, root = 2);
        let mut reduced = vec![0.0; 1000];
        let mut all = vec![0.0; 6];
        let mut from_root = vec![0; 3];
        stage_out!(data, 0, reduced);
        stage_out!(gathered, 1, all);
        stage_out!(root, 0, from_root);
        (reduced, all, from_root)
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(3)?;
    let seeded = std::env::args().nth(1).is_some();
    let (reduced, all, from_root) = app::load(&world)?.run(usize::from(seeded))?;
    assert_eq!(reduced, vec![12.0; 1000]); // (1 + 2 + 3) * 2
    assert_eq!(all, vec![0.0, 0.0, 1.0, 1.0, 2.0, 2.0]);
    assert_eq!(from_root, vec![20; 3]);
    println!("myapp: ok");
    Ok(())
}
"#;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Writes the crate (with `main_rs` as its main) and returns its directory.
fn write_crate(main_rs: &str) -> PathBuf {
    let dir = root().join("target/newcomer/myapp");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = CARGO_TOML.replace("@ROOT@", &root().display().to_string());
    let write_if_changed = |path: PathBuf, text: &str| {
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
            std::fs::write(path, text).unwrap();
        }
    };
    write_if_changed(dir.join("Cargo.toml"), &manifest);
    write_if_changed(dir.join("build.rs"), BUILD_RS);
    write_if_changed(dir.join("src/main.rs"), main_rs);
    std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    dir
}

fn cargo(dir: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    Command::new(cargo)
        .args(args)
        .arg("--offline")
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", root().join("target/newcomer/target"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs")
}

/// `L:C` of the first occurrence of `text` in `source`.
fn line_col(source: &str, text: &str) -> String {
    source
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find(text).map(|c| format!("{}:{}", i + 1, c + 1)))
        .unwrap_or_else(|| panic!("`{text}` is in the source"))
}

#[test]
fn a_new_crate_from_the_readme_builds_runs_and_reports_mistakes_once() {
    // It builds and runs.
    let dir = write_crate(MAIN_RS);
    let built = cargo(&dir, &["build"]);
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(built.status.success(), "the README's crate builds:\n{stderr}");
    let run = cargo(&dir, &["run", "-q"]);
    assert!(run.status.success(), "it runs:\n{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(String::from_utf8_lossy(&run.stdout), "myapp: ok\n");

    // A runtime error of a DSL collective: main prints the message, naming the macro's line.
    let seeded = cargo(&dir, &["run", "-q", "--", "seed"]);
    let stderr = String::from_utf8_lossy(&seeded.stderr);
    assert!(!seeded.status.success());
    let at = format!("src/main.rs:{}", line_col(MAIN_RS, "all_reduce!(ring, mode = ring, nranks = 4)"));
    assert!(stderr.contains(&format!("Error: all_reduce(mode = ring, op = sum, dtype = f32) at {at}")), "{stderr}");
    assert!(stderr.contains("declared nranks = 4") || stderr.contains("nranks"), "{stderr}");
    assert!(!stderr.contains("{ "), "the message, not a struct dump: {stderr}");

    // A kernel mistake: one rustc diagnostic on the token, no panic from the build script.
    let broken = MAIN_RS.replace("DistributedTensor<f64>", "DistributedTensor<f31>");
    let dir = write_crate(&broken);
    let failed = cargo(&dir, &["build"]);
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success(), "the mistake fails the build");
    let at = format!("src/main.rs:{}", line_col(&broken, "f31"));
    assert_eq!(stderr.matches(&at).count(), 1, "reported once, at {at}:\n{stderr}");
    assert!(stderr.contains("error: unknown element type `f31`; did you mean `f32`?"), "{stderr}");
    for noise in ["panicked", "unwrap()", "failed to run custom build command", "cargo::error"] {
        assert!(!stderr.contains(noise), "no `{noise}` in:\n{stderr}");
    }
    write_crate(MAIN_RS);
}
