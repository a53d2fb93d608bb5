//! Procedural macro entry points of pld: thin wrappers over `pld-syntax`.
//!
//! The host DSL (`#[pld::program]`, `#[pld::host]`, `all_reduce!` ...) lands here next; the
//! runtime API it expands into is `pld_core::Host`.
