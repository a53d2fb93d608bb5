//! [`Build`]: the build-script API that compiles a crate's pld programs into its device binary.

use std::path::{Path, PathBuf};

use pld_syntax::{Program, programs_in_file};

use crate::lower::lower_kernel;
use crate::{BackendError, DeviceArtifact, DeviceCompiler, DeviceSource};

/// Compiles the kernels of every `#[pld::program]` in the given files into one device binary
/// and hands it to the crate (`PLD_DEVICE_BINARY`), from a build script:
///
/// ```text
/// // build.rs
/// fn main() {
///     pld_backend::Build::new().file("src/main.rs").compile();
/// }
/// ```
///
/// [`Build::compile`] never panics: a mistake in a kernel is reported once, by rustc, on the
/// offending token (the `#[pld::program]` macro runs the same checks as this build script, from
/// the same front end), and anything else that fails (the C compiler, a file) as `cargo::error`
/// lines. [`Build::try_compile`] returns the error instead, for build scripts that handle it.
/// Device code is recompiled only when the generated C changes, so an edit to host code alone
/// reruns the (fast) generation but not the C compiler.
#[derive(Clone, Debug, Default)]
pub struct Build {
    files: Vec<PathBuf>,
    compiler: DeviceCompiler,
    out_dir: Option<PathBuf>,
}

impl Build {
    /// No files yet.
    pub fn new() -> Build {
        Build::default()
    }

    /// Adds a Rust source file holding `#[pld::program]` modules (relative to the crate root).
    pub fn file(mut self, path: impl AsRef<Path>) -> Build {
        self.files.push(path.as_ref().to_path_buf());
        self
    }

    /// The compiler settings for device code.
    pub fn compiler(mut self, compiler: DeviceCompiler) -> Build {
        self.compiler = compiler;
        self
    }

    /// Where to write the generated C and the binary (default: cargo's `OUT_DIR`).
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Build {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The device source of every program in the files, without compiling it.
    pub fn generate(&self) -> Result<DeviceSource, BackendError> {
        let mut body = String::new();
        let mut failures = Vec::new();
        for path in &self.files {
            let text =
                std::fs::read_to_string(path).map_err(|source| BackendError::Read { path: path.clone(), source })?;
            match programs_in_file(&text) {
                Ok(programs) => {
                    for program in programs {
                        body.push_str(&program_c(&program));
                    }
                }
                Err(error) => failures.push(render(path, &text, error)),
            }
        }
        if !failures.is_empty() {
            return Err(BackendError::Program(failures.join("\n")));
        }
        Ok(DeviceSource::new(body))
    }

    /// Generates and compiles the device binary and tells cargo about it; the form a build
    /// script calls, with nothing to unwrap. Returns the binary, or `None` after reporting why
    /// not: a program's mistakes are left to rustc, which reports each once on its token when it
    /// compiles the crate (saying them here too would say each twice); any other failure is
    /// printed as `cargo::error` lines, which fail the build.
    pub fn compile(&self) -> Option<DeviceArtifact> {
        match self.try_compile() {
            Ok(artifact) => Some(artifact),
            Err(BackendError::Program(_)) => None,
            Err(error) => {
                for line in error.to_string().lines().filter(|l| !l.trim().is_empty()) {
                    println!("cargo::error={line}");
                }
                None
            }
        }
    }

    /// Generates and compiles the device binary and tells cargo about it, returning the error
    /// (printing nothing about it) when that fails.
    pub fn try_compile(&self) -> Result<DeviceArtifact, BackendError> {
        for path in &self.files {
            println!("cargo::rerun-if-changed={}", path.display());
        }
        println!("cargo::rerun-if-env-changed=CC");
        println!("cargo::rerun-if-env-changed=CFLAGS");
        let result = self.generate().and_then(|source| {
            let out_dir = match &self.out_dir {
                Some(dir) => dir.clone(),
                None => PathBuf::from(std::env::var_os("OUT_DIR").ok_or(BackendError::NoOutDir)?),
            };
            self.compiler.compile(&source, &out_dir, "pld_device")
        });
        if let Ok(artifact) = &result {
            println!("cargo::rustc-env=PLD_DEVICE_BINARY={}", artifact.path.display());
        }
        result
    }
}

/// The C of one program: its kernels and the hash the program macro checks at load.
pub(crate) fn program_c(program: &Program) -> String {
    let module = program.ident.to_string();
    let mut c = String::new();
    let mut any = false;
    for kernel in program.kernels().filter_map(|k| k.ir.as_ref()) {
        c.push_str(&lower_kernel(&module, kernel));
        any = true;
    }
    if any {
        c.push_str(&format!("const char pld_program_hash__{module}[] = \"{}\";\n\n", program.kernels_hash()));
    }
    c
}

/// `file:line:col: message`, the line, and a caret, for each error.
fn render(path: &Path, text: &str, error: syn::Error) -> String {
    error
        .into_iter()
        .map(|e| {
            let start = e.span().start();
            let line = text.lines().nth(start.line.saturating_sub(1)).unwrap_or("");
            format!(
                "{}:{}:{}: {e}\n    {line}\n    {}^",
                path.display(),
                start.line,
                start.column + 1,
                " ".repeat(start.column)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
