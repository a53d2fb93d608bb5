//! Support for the code `#[pld::program]` generates: operand checks as trait bounds, so a
//! misuse visible in the types is a compile error that says what pld expects.

use pld_model::Element;

use crate::Window;

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

/// Something that can hold all_to_all_v counts: an `i32` window.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold all_to_all_v counts",
    label = "send and receive counts are `i32` windows with one cell per rank",
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
