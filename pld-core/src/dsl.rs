//! Support for the code `#[pld::program]` generates: operand checks as trait bounds, so a
//! misuse visible in the types is a compile error that says what pld expects.

use std::marker::PhantomData;
use std::sync::Arc;

use pld_model::Element;

use crate::device::{DeviceBinary, Kernel};
use crate::error::{Error, Result};
use crate::memory::{Allocation, Window};

/// Something a collective can take as a window operand: a [`Window`] (or a reference to one).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a pld window",
    label = "collectives take windows made with `window!`",
    note = "copy host data into a window with `stage_in!(window, rank, data)`"
)]
pub trait AsWindow {
    /// The element type.
    type Elem: Element;
    /// The window.
    fn as_window(&self) -> &Window<'_, Self::Elem>;
}

impl<T: Element> AsWindow for Window<'_, T> {
    type Elem = T;
    fn as_window(&self) -> &Window<'_, T> {
        self
    }
}

impl<W: AsWindow + ?Sized> AsWindow for &W {
    type Elem = W::Elem;
    fn as_window(&self) -> &Window<'_, W::Elem> {
        (**self).as_window()
    }
}

/// Something that can be a signal: an `i32` window.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a signal",
    label = "a signal is an `i32` window with one cell per rank",
    note = "make one with `let s = signal!();`"
)]
pub trait AsSignal {
    /// The signal's window.
    fn as_signal(&self) -> &Window<'_, i32>;
}

impl AsSignal for Window<'_, i32> {
    fn as_signal(&self) -> &Window<'_, i32> {
        self
    }
}

impl<S: AsSignal + ?Sized> AsSignal for &S {
    fn as_signal(&self) -> &Window<'_, i32> {
        (**self).as_signal()
    }
}

/// Something that can hold the counts of all_to_all_v or all_gather_v: an `i32` window.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold counts of rows",
    label = "the counts of all_to_all_v and all_gather_v are `i32` windows with one cell per rank",
    note = "make one with `let counts = window!(i32, [nranks]);`"
)]
pub trait AsCounts {
    /// The counts' window.
    fn as_counts(&self) -> &Window<'_, i32>;
}

impl AsCounts for Window<'_, i32> {
    fn as_counts(&self) -> &Window<'_, i32> {
        self
    }
}

impl<C: AsCounts + ?Sized> AsCounts for &C {
    fn as_counts(&self) -> &Window<'_, i32> {
        (**self).as_counts()
    }
}

/// A collective's window operand, checked by [`AsWindow`].
pub fn window<W: AsWindow + ?Sized>(w: &W) -> &Window<'_, W::Elem> {
    w.as_window()
}

/// A collective's signal, checked by [`AsSignal`].
pub fn signal<S: AsSignal + ?Sized>(s: &S) -> &Window<'_, i32> {
    s.as_signal()
}

/// all_to_all_v's counts, checked by [`AsCounts`].
pub fn counts<C: AsCounts + ?Sized>(c: &C) -> &Window<'_, i32> {
    c.as_counts()
}

/// `stage_in!`'s host data: anything that views as `[T]` (a slice, an array, a `Vec`, a row).
pub fn host_data<T, D: AsRef<[T]> + ?Sized>(data: &D) -> &[T] {
    data.as_ref()
}

/// `stage_out!`'s host data: anything that views mutably as `[T]`.
pub fn host_data_mut<T, D: AsMut<[T]> + ?Sized>(data: &mut D) -> &mut [T] {
    data.as_mut()
}

/// The device binary of one program (built by `pld_backend::Build` from the crate's build
/// script and embedded), checked against the program's kernels.
#[derive(Debug)]
pub struct ProgramBinary {
    binary: Arc<DeviceBinary>,
    program: &'static str,
}

impl ProgramBinary {
    /// Loads `image` for `program`, refusing it unless it holds this program's kernels as
    /// hashed by the program macro (`kernels_hash`).
    pub fn load(program: &'static str, image: &'static [u8], kernels_hash: &str) -> Result<ProgramBinary> {
        // SAFETY: the image is the crate's device binary, written by pld-backend from the
        // crate's build script; its ABI identity is checked on load, the program hash below.
        let binary = unsafe { DeviceBinary::from_bytes(&format!("pld_device_{program}"), image, None) }?;
        let symbol = format!("pld_program_hash__{program}");
        match binary.string_symbol(&symbol) {
            Some(found) if found == kernels_hash => Ok(ProgramBinary { binary: Arc::new(binary), program }),
            Some(found) => Err(Error::DeviceBinary {
                binary: binary.name().to_owned(),
                reason: format!(
                    "holds kernels of program `{program}` with hash {found}, but the program's kernels hash to \
                     {kernels_hash} (stale binary)"
                ),
            }),
            None => Err(Error::DeviceBinary {
                binary: binary.name().to_owned(),
                reason: format!(
                    "has no kernels of program `{program}`: add the file that holds it to the build script's \
                     `pld_backend::Build::file` list"
                ),
            }),
        }
    }

    /// The kernel `symbol`.
    pub fn kernel(&self, symbol: &str) -> Result<Kernel> {
        Kernel::new(&self.binary, symbol)
    }

    /// The program's name.
    pub fn program(&self) -> &'static str {
        self.program
    }
}

/// The arguments of one kernel launch, built in parameter order by the generated launchers:
/// two words per tensor or window (address or offset, then length), one per scalar.
#[derive(Default)]
pub struct KernelArgs<'a> {
    pub(crate) words: Vec<u64>,
    /// Copies of read-only host tensors: the launch is queued, the caller's data may change.
    pub(crate) copies: Vec<Vec<u64>>,
    pub(crate) windows: Vec<Arc<Allocation>>,
    /// A writable host tensor: the launch waits for the kernel before returning.
    pub(crate) blocking: bool,
    _borrows: PhantomData<&'a mut ()>,
}

impl<'a> KernelArgs<'a> {
    /// No arguments yet.
    pub fn new() -> KernelArgs<'a> {
        KernelArgs::default()
    }

    /// A `&Tensor<T>` parameter: the data is copied, so the caller may reuse it at once.
    pub fn tensor<T: Element>(&mut self, data: &[T]) {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let mut copy = vec![0u64; bytes.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut copy)[..bytes.len()].copy_from_slice(bytes);
        self.words.extend([copy.as_ptr() as u64, data.len() as u64]);
        self.copies.push(copy);
    }

    /// A `&mut Tensor<T>` parameter: the kernel writes the caller's memory, so the launch
    /// returns only once the kernel has run.
    pub fn tensor_mut<T: Element>(&mut self, data: &'a mut [T]) {
        self.words.extend([data.as_mut_ptr() as u64, data.len() as u64]);
        self.blocking = true;
    }

    /// A `&DistributedTensor<T>` parameter.
    pub fn window<T: Element>(&mut self, window: &Window<'_, T>) {
        self.words.extend([window.offset() as u64, window.len() as u64]);
        self.windows.push(window.allocation());
    }

    /// An integer scalar.
    pub fn int(&mut self, value: i64) {
        self.words.push(value as u64);
    }

    /// A float scalar.
    pub fn float(&mut self, value: f64) {
        self.words.push(value.to_bits());
    }
}

/// Something that can be a root: a rank of any integer type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a root",
    label = "a root is a rank: an integer",
    note = "write `root = 0`, or an integer expression such as `root = world_size() - 1`"
)]
pub trait AsRoot {
    /// The rank as the runtime's `i64` (saturating: a rank past `i64::MAX` is out of range
    /// anyway, and the runtime says so).
    fn into_root(self) -> i64;
}

macro_rules! as_root {
    ($($t:ty),*) => {$(
        impl AsRoot for $t {
            fn into_root(self) -> i64 {
                i64::try_from(self).unwrap_or(i64::MAX)
            }
        }
    )*};
}
as_root!(i8, u8, i16, u16, i32, u32, i64, u64, i128, u128, isize, usize);

/// A root operand, checked by [`AsRoot`] (a function, not a cast: a cast of a literal or of an
/// `i64` would be a lint in the user's code).
pub fn root(root: impl AsRoot) -> i64 {
    root.into_root()
}

/// Something that can name a rank of `send!`/`recv!` (`to = ..`, `from = ..`): an integer.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a rank",
    label = "`to` and `from` name ranks: integers",
    note = "write `to = 1`, or an integer expression such as `to = (r + 1) % world_size()`"
)]
pub trait AsRank {
    /// The rank as the runtime's `i64` (saturating, as [`AsRoot`]).
    fn into_rank(self) -> i64;
}

macro_rules! as_rank {
    ($($t:ty),*) => {$(
        impl AsRank for $t {
            fn into_rank(self) -> i64 {
                i64::try_from(self).unwrap_or(i64::MAX)
            }
        }
    )*};
}
as_rank!(i8, u8, i16, u16, i32, u32, i64, u64, i128, u128, isize, usize);

/// A `to`/`from` operand, checked by [`AsRank`].
pub fn rank(rank: impl AsRank) -> i64 {
    rank.into_rank()
}

/// Something that can be a `premul_sum` scalar: a number.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a premul_sum scalar",
    label = "a scalar is a number",
    note = "write `op = premul_sum(0.5)`, or a numeric expression"
)]
pub trait AsScalar {
    /// The scalar as the runtime's `f64`.
    fn into_scalar(self) -> f64;
}

macro_rules! as_scalar {
    ($($t:ty),*) => {$(
        impl AsScalar for $t {
            fn into_scalar(self) -> f64 {
                self as f64
            }
        }
    )*};
}
as_scalar!(f32, f64, i8, u8, i16, u16, i32, u32, i64, u64, isize, usize);

/// A `premul_sum` scalar, checked by [`AsScalar`] (a function, not a cast, as [`root`]).
pub fn scalar(scalar: impl AsScalar) -> f64 {
    scalar.into_scalar()
}

/// A collective's operand given as a plain host [`Tensor`](crate::Tensor) with one row per
/// rank (`[nranks, ...]`): a window of one row's shape, allocated for this call only (freed once
/// the call is past, so a call in a loop does not grow memory), each of this host's ranks'
/// rows staged into it. What `all_reduce!(tensor)` expands to before the call.
pub fn stage_tensor<'h, T: Element>(
    host: &'h crate::Host<'_>,
    name: &str,
    tensor: &crate::Tensor<T>,
) -> Result<Window<'h, T>> {
    let dims = tensor.shape().dims();
    let n = host.nranks();
    if dims.first() != Some(&n) {
        return Err(Error::BadOperand {
            call: format!("staging the tensor `{name}`"),
            role: "tensor",
            buffer: name.to_owned(),
            expected: format!("one row per rank: [{n}, ...]"),
            found: format!("{} {dims:?}", T::DTYPE),
        });
    }
    let row: Vec<usize> = if dims.len() == 1 { vec![1] } else { dims[1..].to_vec() };
    let window = host.call_window::<T>(name, row)?;
    for r in host.ranks() {
        host.write_fresh(&window, r, tensor.row(r))?;
    }
    Ok(window)
}

/// Copies each of this host's ranks' view of a staged tensor's window back into its row of
/// `tensor`, once the call is done: what `all_reduce!(tensor)` expands to after the call when
/// the collective writes that operand.
pub fn unstage<T: Element>(
    host: &crate::Host<'_>,
    window: &Window<'_, T>,
    tensor: &mut crate::Tensor<T>,
) -> Result<()> {
    for r in host.ranks() {
        host.read_into(window, r, tensor.row_mut(r))?;
    }
    Ok(())
}
