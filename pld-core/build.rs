//! Generates the builtin collective kernels with pld-backend and compiles them into the device
//! binary that this crate embeds, so programs that only call collectives need no build.rs.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CC");
    println!("cargo::rerun-if-env-changed=CFLAGS");
    let out_dir = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let source = pld_backend::builtin_source();
    match pld_backend::DeviceCompiler::new().compile(&source, &out_dir, "pld_builtins") {
        Ok(artifact) => {
            println!("cargo::rustc-env=PLD_BUILTINS_SO={}", artifact.path.display());
            println!("cargo::rustc-env=PLD_BUILTINS_HASH={}", artifact.hash);
        }
        Err(e) => {
            for line in e.to_string().lines() {
                println!("cargo::error={line}");
            }
            std::process::exit(1);
        }
    }
}
