use std::path::PathBuf;

/// Why generating or compiling device code failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// Writing a generated file failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The C compiler could not be found or configured (set `CC` to choose one).
    #[error("cannot find a C compiler for the device binary: {0} (set CC to the compiler to use)")]
    NoCompiler(String),
    /// The C compiler could not be started.
    #[error("cannot run the C compiler `{compiler}`: {source} (set CC to the compiler to use)")]
    Spawn {
        /// The compiler command.
        compiler: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A source file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A program has mistakes (rendered against the source).
    #[error("{0}")]
    Program(String),
    /// Not run from a build script and no output directory given.
    #[error("OUT_DIR is not set: run from a build script, or give Build::out_dir")]
    NoOutDir,
    /// The C compiler rejected the generated code.
    #[error("the C compiler failed on {source_file} with {status}:\n{stderr}")]
    Compile {
        /// The generated file.
        source_file: PathBuf,
        /// The compiler's exit status.
        status: std::process::ExitStatus,
        /// What it printed.
        stderr: String,
    },
}
