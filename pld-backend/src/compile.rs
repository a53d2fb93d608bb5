use std::path::{Path, PathBuf};
use std::process::Command;

use crate::abi::{HEADER, HEADER_NAME};
use crate::{BackendError, DeviceSource};

/// A compiled device binary (a shared object for the `sim` target).
#[derive(Clone, Debug)]
pub struct DeviceArtifact {
    /// Where the shared object was written.
    pub path: PathBuf,
    /// The content hash it reports.
    pub hash: String,
    /// The generated C it was compiled from.
    pub c_file: PathBuf,
}

/// Compiles generated device code into a shared object with the system C compiler, found the
/// way the `cc` crate finds it (`CC`, `CFLAGS`, the target's default).
#[derive(Clone, Debug)]
pub struct DeviceCompiler {
    opt_level: u32,
    warnings_as_errors: bool,
    compiler: Option<PathBuf>,
}

impl Default for DeviceCompiler {
    fn default() -> Self {
        DeviceCompiler { opt_level: 3, warnings_as_errors: true, compiler: None }
    }
}

impl DeviceCompiler {
    /// A compiler at `-O3` that rejects warnings in generated code.
    pub fn new() -> DeviceCompiler {
        DeviceCompiler::default()
    }

    /// Sets the optimisation level (`-O<n>`).
    pub fn opt_level(mut self, level: u32) -> DeviceCompiler {
        self.opt_level = level;
        self
    }

    /// Whether a compiler warning fails the build (on by default: generated code must be clean).
    pub fn warnings_as_errors(mut self, yes: bool) -> DeviceCompiler {
        self.warnings_as_errors = yes;
        self
    }

    /// Uses the C compiler at `path` instead of the one `cc` finds (`CC`, the target's default).
    pub fn compiler(mut self, path: impl Into<PathBuf>) -> DeviceCompiler {
        self.compiler = Some(path.into());
        self
    }

    /// Writes `source` as `<out_dir>/<name>.c` beside the ABI header and compiles it into
    /// `<out_dir>/lib<name>.so`.
    pub fn compile(&self, source: &DeviceSource, out_dir: &Path, name: &str) -> Result<DeviceArtifact, BackendError> {
        let write = |path: PathBuf, text: &str| {
            std::fs::write(&path, text).map_err(|source| BackendError::Write { path: path.clone(), source })
        };
        std::fs::create_dir_all(out_dir)
            .map_err(|source| BackendError::Write { path: out_dir.to_path_buf(), source })?;
        let c_file = out_dir.join(format!("{name}.c"));
        let so = out_dir.join(format!("lib{name}.so"));
        let c = source.to_c();
        // Unchanged device code is not recompiled (an edit to host code alone, say).
        let header_path = out_dir.join(HEADER_NAME);
        let unchanged = std::fs::read_to_string(&c_file).is_ok_and(|old| old == c)
            && std::fs::read_to_string(&header_path).is_ok_and(|old| old == HEADER)
            && so.exists();
        if unchanged {
            return Ok(DeviceArtifact { path: so, hash: source.hash().to_owned(), c_file });
        }
        // Nothing of an earlier build survives a compile that fails: the binary is written
        // under another name and renamed only once it is complete, and a failed compile leaves
        // no C file for the next build's "unchanged" check to match (a later good build of the
        // same code compiled nothing and handed back the stale binary of the one before).
        remove_if_present(&so)?;
        write(header_path, HEADER)?;
        write(c_file.clone(), &c)?;
        let partial = out_dir.join(format!("lib{name}.so.partial"));

        let mut cmd = self.command()?;
        cmd.args(["-std=gnu11", "-shared", "-fPIC", "-Wall", "-Wno-unused-function"]);
        if self.warnings_as_errors {
            cmd.arg("-Werror");
        }
        cmd.arg(format!("-O{}", self.opt_level)).arg("-I").arg(out_dir);
        cmd.arg("-o").arg(&partial).arg(&c_file);
        let compiler = format!("{:?}", cmd.get_program());
        let output = cmd.output();
        let failed = |status: Option<std::process::ExitStatus>, stderr: String| {
            let _ = std::fs::remove_file(&c_file);
            let _ = std::fs::remove_file(&partial);
            match status {
                Some(status) => BackendError::Compile { source_file: c_file.clone(), status, stderr },
                None => BackendError::Spawn { compiler: compiler.clone(), source: std::io::Error::other(stderr) },
            }
        };
        let output = output.map_err(|e| failed(None, e.to_string()))?;
        if !output.status.success() || !partial.exists() {
            return Err(failed(Some(output.status), String::from_utf8_lossy(&output.stderr).into_owned()));
        }
        std::fs::rename(&partial, &so).map_err(|source| BackendError::Write { path: so.clone(), source })?;
        Ok(DeviceArtifact { path: so, hash: source.hash().to_owned(), c_file })
    }

    /// The compiler command from `cc`, usable both inside a build script (where cargo sets
    /// TARGET/HOST) and outside one (tests, tools), where the host triple is assumed.
    fn command(&self) -> Result<Command, BackendError> {
        if let Some(path) = &self.compiler {
            return Ok(Command::new(path));
        }
        let host = std::env::var("HOST").unwrap_or_else(|_| host_triple());
        let target = std::env::var("TARGET").unwrap_or_else(|_| host.clone());
        let compiler = cc::Build::new()
            .cargo_metadata(false)
            .cargo_warnings(false)
            .opt_level(self.opt_level)
            .host(&host)
            .target(&target)
            .try_get_compiler()
            .map_err(|e| BackendError::NoCompiler(e.to_string()))?;
        Ok(compiler.to_command())
    }
}

fn remove_if_present(path: &Path) -> Result<(), BackendError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(BackendError::Write { path: path.to_path_buf(), source: e })
        }
        _ => Ok(()),
    }
}

fn host_triple() -> String {
    let arch = std::env::consts::ARCH;
    match std::env::consts::OS {
        "linux" => format!("{arch}-unknown-linux-gnu"),
        "macos" => format!("{arch}-apple-darwin"),
        os => format!("{arch}-unknown-{os}"),
    }
}
