//! Compiles the kernels of the programs in `src/lib.rs` into this crate's device binary.

fn main() {
    pld_backend::Build::new().file("src/lib.rs").compile();
}
