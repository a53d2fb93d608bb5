//! Loading device binaries (shared objects for the `sim` target) and checking that they were
//! built for this runtime: same ABI version, same struct layout, expected content hash, and the
//! runtime's entry point after a kernel (`pld_end_call`) present.

use std::ffi::{CStr, c_char};
use std::io::Write as _;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use pld_model::{ABI_VERSION, KernelVariant};

use super::abi::{EndCallFn, KernelFn, rust_layout};
use crate::error::{Error, Result};

/// A loaded device binary: kernels compiled against the pld device ABI.
pub struct DeviceBinary {
    name: String,
    hash: String,
    library: libloading::Library,
    /// Its `pld_end_call`, valid while `library` lives.
    end_call: EndCallFn,
    /// The in-memory file an embedded image was loaded from; it must outlive the mapping.
    _image: Option<OwnedFd>,
}

impl std::fmt::Debug for DeviceBinary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBinary").field("name", &self.name).field("hash", &self.hash).finish()
    }
}

impl DeviceBinary {
    /// Loads a binary embedded in the executable (`include_bytes!`), through an anonymous
    /// in-memory file so nothing is left behind on disk.
    ///
    /// # Safety
    /// Loading runs the binary's initialisers and later calls run its kernels: `image` must be a
    /// device binary produced by pld-backend (the identity checks catch stale and foreign pld
    /// binaries, not arbitrary shared objects).
    pub unsafe fn from_bytes(name: &str, image: &[u8], expected_hash: Option<&str>) -> Result<DeviceBinary> {
        let sys = |what: &str, e: std::io::Error| Error::system(format!("{what} for device binary `{name}`"), e);
        let fd = rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(|e| sys("memfd_create", e.into()))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(image).map_err(|e| sys("writing the image", e))?;
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        // SAFETY: forwarded from the caller.
        unsafe { Self::load(name, Path::new(&path), expected_hash, Some(OwnedFd::from(file))) }
    }

    /// Loads a binary from a file, e.g. one a build script wrote.
    ///
    /// # Safety
    /// As [`DeviceBinary::from_bytes`]: the file must be a device binary built by pld-backend.
    pub unsafe fn open(path: &Path, expected_hash: Option<&str>) -> Result<DeviceBinary> {
        // SAFETY: forwarded from the caller.
        unsafe { Self::load(&path.display().to_string(), path, expected_hash, None) }
    }

    /// # Safety
    /// As [`DeviceBinary::from_bytes`].
    unsafe fn load(
        name: &str,
        path: &Path,
        expected_hash: Option<&str>,
        image: Option<OwnedFd>,
    ) -> Result<DeviceBinary> {
        let bad = |reason: String| Error::DeviceBinary { binary: name.to_owned(), reason };
        // SAFETY: the caller vouches for the binary; the identity checks below run before any
        // kernel is called.
        let library = unsafe { libloading::Library::new(path) }.map_err(|e| bad(format!("cannot be loaded: {e}")))?;
        let missing = |what: &str| bad(format!("has no `{what}`: it was not built by pld-backend"));

        // SAFETY: `pld_abi_version` is a `const uint32_t` in every pld device binary.
        let version = unsafe {
            let sym = library.get::<*const u32>(b"pld_abi_version").map_err(|_| missing("pld_abi_version"))?;
            **sym
        };
        if version != ABI_VERSION {
            return Err(bad(format!("was built for device ABI {version}, this runtime speaks {ABI_VERSION}")));
        }
        // SAFETY: `pld_abi_layout` has this signature in ABI version `ABI_VERSION`.
        let layout = unsafe {
            let f = library
                .get::<unsafe extern "C" fn(*mut u64, u32) -> u32>(b"pld_abi_layout")
                .map_err(|_| missing("pld_abi_layout"))?;
            let mut v = vec![0u64; 256];
            let n = f(v.as_mut_ptr(), v.len() as u32) as usize;
            v.truncate(n.min(256));
            v
        };
        if layout != rust_layout() {
            return Err(bad(format!(
                "lays out the ABI structs as {layout:?}, this runtime as {:?} (different header)",
                rust_layout()
            )));
        }
        // SAFETY: `pld_content_hash` is a NUL-terminated `const char[]` in every binary.
        let hash = unsafe {
            let sym = library.get::<*const c_char>(b"pld_content_hash").map_err(|_| missing("pld_content_hash"))?;
            CStr::from_ptr(*sym).to_string_lossy().into_owned()
        };
        if let Some(expected) = expected_hash
            && expected != hash
        {
            return Err(bad(format!("has content hash {hash}, but {expected} was expected (stale binary)")));
        }
        // SAFETY: `pld_end_call` has this signature in ABI version `ABI_VERSION`.
        let end_call = unsafe { *library.get::<EndCallFn>(b"pld_end_call").map_err(|_| missing("pld_end_call"))? };
        Ok(DeviceBinary { name: name.to_owned(), hash, library, end_call, _image: image })
    }

    /// The binary's name (its file, or the name it was embedded under).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The content hash the binary reports.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The NUL-terminated string a `const char name[]` symbol holds, if the binary has it.
    pub fn string_symbol(&self, name: &str) -> Option<String> {
        // SAFETY: pld binaries define their string symbols as NUL-terminated `const char[]`.
        unsafe {
            let sym = self.library.get::<*const c_char>(name.as_bytes()).ok()?;
            Some(CStr::from_ptr(*sym).to_string_lossy().into_owned())
        }
    }

    /// Its `pld_end_call`: the look for sleeping readers a kernel's LL posts left due. The
    /// pointer is valid while `self` lives.
    pub(crate) fn end_call(&self) -> EndCallFn {
        self.end_call
    }

    /// Looks up a kernel by symbol. The pointer is valid while `self` lives.
    pub(crate) fn kernel(&self, symbol: &str) -> Result<KernelFn> {
        // SAFETY: every exported kernel symbol of a pld binary has the `pld_kernel_fn` signature.
        unsafe { self.library.get::<KernelFn>(symbol.as_bytes()) }
            .map(|sym| *sym)
            .map_err(|_| Error::DeviceBinary { binary: self.name.clone(), reason: format!("has no kernel `{symbol}`") })
    }
}

/// The builtin collective library, embedded at build time, with every variant resolved.
pub(crate) struct Builtins {
    binary: DeviceBinary,
    /// By [`KernelVariant::index`]: a lookup per call is an array index.
    kernels: Box<[Option<KernelFn>]>,
}

impl Builtins {
    pub(crate) fn kernel(&self, variant: KernelVariant) -> KernelFn {
        // Every variant was resolved at load, so the lookup cannot fail.
        self.kernels[variant.index()].expect("every builtin variant is resolved at load")
    }

    /// The `pld_end_call` the runtime runs after every kernel that left LL wakes due, user
    /// kernels' included: every binary is built against the same header and ABI (checked at
    /// load), and the look reads only the kernel's context.
    pub(crate) fn end_call(&self) -> EndCallFn {
        self.binary.end_call()
    }
}

static BUILTINS_IMAGE: &[u8] = include_bytes!(env!("PLD_BUILTINS_SO"));

/// The builtin library, once loaded.
static BUILTINS: OnceLock<Result<Builtins>> = OnceLock::new();

/// The builtin library, loaded once per process. Inline, with the load apart: every collective
/// call asks, and its large result returned through memory from a call was a stall.
#[inline]
pub(crate) fn builtins() -> Result<&'static Builtins> {
    match BUILTINS.get() {
        Some(Ok(builtins)) => Ok(builtins),
        _ => load_builtins(),
    }
}

/// [`builtins`] the first time (or its error again).
#[cold]
#[inline(never)]
fn load_builtins() -> Result<&'static Builtins> {
    BUILTINS
        .get_or_init(|| {
            // SAFETY: the image is the builtin library pld-backend built for this crate.
            let binary =
                unsafe { DeviceBinary::from_bytes("pld_builtins", BUILTINS_IMAGE, Some(env!("PLD_BUILTINS_HASH"))) }?;
            let mut kernels = vec![None; KernelVariant::INDEX_BOUND].into_boxed_slice();
            for variant in KernelVariant::all() {
                kernels[variant.index()] = Some(binary.kernel(&variant.symbol())?);
            }
            Ok(Builtins { binary, kernels })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A kernel of a loaded device binary, ready to [`launch`](crate::Host::launch).
#[derive(Clone)]
pub struct Kernel {
    binary: Arc<DeviceBinary>,
    function: KernelFn,
    name: Arc<str>,
    /// The source file and parameter names of a `#[pld::kernel]`, for its diagnoses.
    source: Option<KernelSource>,
}

/// A `#[pld::kernel]`'s source file and parameter names, for its diagnoses.
pub(crate) type KernelSource = (&'static str, &'static [&'static str]);

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({} in {})", self.name, self.binary.name())
    }
}

impl Kernel {
    /// Looks up the kernel `name` of `binary`.
    pub fn new(binary: &Arc<DeviceBinary>, name: &str) -> Result<Kernel> {
        Ok(Kernel { function: binary.kernel(name)?, binary: Arc::clone(binary), name: name.into(), source: None })
    }

    /// The kernel's source file and parameter names (the launchers `#[pld::program]` generates
    /// give them), so an access out of bounds names the file, the line and the parameter.
    pub fn with_source(mut self, file: &'static str, params: &'static [&'static str]) -> Kernel {
        self.source = Some((file, params));
        self
    }

    /// The source file and parameter names a `#[pld::kernel]` was given, if any.
    pub(crate) fn source(&self) -> Option<KernelSource> {
        self.source
    }

    /// The kernel's symbol.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel's name as its user wrote it: `halve` for the symbol `pld_kernel_app__halve`
    /// that `#[pld::kernel] fn halve` in program `app` compiles to; other symbols as they are.
    pub fn user_name(&self) -> &str {
        self.name
            .strip_prefix("pld_kernel_")
            .and_then(|rest| rest.split_once("__"))
            .map_or(&self.name, |(_, name)| name)
    }

    pub(crate) fn function(&self) -> KernelFn {
        self.function
    }
}
