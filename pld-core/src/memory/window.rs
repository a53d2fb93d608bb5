//! Symmetric windows: raw allocations ([`Buffer`]) and typed, bounds-checked views ([`Window`]).

use std::marker::PhantomData;
use std::sync::Arc;

use pld_model::{DType, Element};

use super::heap::SymmetricHeap;
use crate::error::{Error, Result};

/// A shape: the extent of each dimension, outermost first.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Shape(pub Vec<usize>);

impl Shape {
    /// Number of elements (`usize::MAX` if the product overflows, which no allocation fits).
    pub fn len(&self) -> usize {
        self.0.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).unwrap_or(usize::MAX)
    }

    /// True when some dimension is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The extents.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(dims: [usize; N]) -> Shape {
        Shape(dims.to_vec())
    }
}

impl From<usize> for Shape {
    fn from(len: usize) -> Shape {
        Shape(vec![len])
    }
}

impl From<Vec<usize>> for Shape {
    fn from(dims: Vec<usize>) -> Shape {
        Shape(dims)
    }
}

impl From<&[usize]> for Shape {
    fn from(dims: &[usize]) -> Shape {
        Shape(dims.to_vec())
    }
}

/// One symmetric allocation: the same offset in every rank's window. Freed (returned to the
/// heap) when the last handle goes: the host scope's, a view's, or a queued task's.
pub(crate) struct Allocation {
    heap: Arc<SymmetricHeap>,
    offset: usize,
    bytes: usize,
    name: String,
}

impl Allocation {
    pub(crate) fn new(heap: &Arc<SymmetricHeap>, name: &str, bytes: usize) -> Result<Arc<Allocation>> {
        let offset = heap.alloc(name, bytes)?;
        Ok(Arc::new(Allocation { heap: Arc::clone(heap), offset, bytes, name: name.to_owned() }))
    }

    pub(crate) fn offset(&self) -> usize {
        self.offset
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Whether this allocation lives in `heap` (a window of that world).
    pub(crate) fn is_in(&self, heap: &Arc<SymmetricHeap>) -> bool {
        Arc::ptr_eq(&self.heap, heap)
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        self.heap.free(self.offset);
    }
}

/// An untyped symmetric allocation, to be viewed with [`Buffer::view`].
pub struct Buffer<'h> {
    alloc: Arc<Allocation>,
    _host: PhantomData<&'h ()>,
}

impl<'h> Buffer<'h> {
    pub(crate) fn new(alloc: Arc<Allocation>) -> Buffer<'h> {
        Buffer { alloc, _host: PhantomData }
    }

    /// The allocation's name.
    pub fn name(&self) -> &str {
        self.alloc.name()
    }

    /// Bytes per rank.
    pub fn bytes(&self) -> usize {
        self.alloc.bytes()
    }

    /// A typed view of the allocation from its start; an error if it does not fit.
    pub fn view<T: Element>(&self, shape: impl Into<Shape>) -> Result<Window<'h, T>> {
        let shape = shape.into();
        let len = shape.len();
        let view_bytes = len.saturating_mul(T::DTYPE.size());
        if view_bytes > self.bytes() {
            return Err(Error::ViewOutOfBounds {
                buffer: self.name().to_owned(),
                dtype: T::DTYPE,
                shape: shape.0,
                view_bytes,
                alloc_bytes: self.bytes(),
            });
        }
        Ok(Window { alloc: Arc::clone(&self.alloc), shape, len, id: new_view_id(), _marker: PhantomData })
    }
}

/// The next view's [`Window::id`] (from 1, never reused in a process).
static NEXT_VIEW: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A view identity no view had before.
pub(crate) fn new_view_id() -> u64 {
    NEXT_VIEW.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Ties a view to its host scope and element type without owning a `T`.
type ViewMarker<'h, T> = PhantomData<(&'h (), fn() -> T)>;

/// A typed view of a symmetric allocation: on every rank, `shape` elements of `T` at the same
/// offset. Cheap to clone; lives no longer than the host scope that made it.
pub struct Window<'h, T> {
    alloc: Arc<Allocation>,
    shape: Shape,
    /// `shape`'s element count, counted once: a call asks for it several times, and a product
    /// over a vector each time was a tenth of a small all_reduce's host path.
    len: usize,
    /// The view's identity: made by one [`Buffer::view`] (a clone is the same view), so two
    /// windows with one id are one allocation with one shape. What a call site's plan is kept
    /// by (`collective::site`): one word compared, not an allocation and a shape.
    id: u64,
    _marker: ViewMarker<'h, T>,
}

impl<T> Clone for Window<'_, T> {
    fn clone(&self) -> Self {
        Window {
            alloc: Arc::clone(&self.alloc),
            shape: self.shape.clone(),
            len: self.len,
            id: self.id,
            _marker: PhantomData,
        }
    }
}

impl<T: Element> std::fmt::Debug for Window<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Window({} {}{:?} @ {})", self.name(), T::DTYPE, self.shape.0, self.offset())
    }
}

impl<'h, T: Element> Window<'h, T> {
    /// The allocation's name.
    pub fn name(&self) -> &str {
        self.alloc.name()
    }

    /// The view's shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Elements per rank.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the view has no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// Bytes per rank covered by the view.
    #[inline]
    pub fn bytes(&self) -> usize {
        self.len() * T::DTYPE.size()
    }

    /// Offset of the view in every rank's window (what kernels receive).
    pub fn offset(&self) -> usize {
        self.alloc.offset()
    }

    /// True when both views are of the same allocation.
    pub fn same_allocation<U: Element>(&self, other: &Window<'_, U>) -> bool {
        Arc::ptr_eq(&self.alloc, &other.alloc)
    }

    pub(crate) fn allocation(&self) -> Arc<Allocation> {
        Arc::clone(&self.alloc)
    }

    /// The allocation, borrowed (compared without touching its count).
    pub(crate) fn allocation_ref(&self) -> &Arc<Allocation> {
        &self.alloc
    }

    pub(crate) fn belongs_to(&self, heap: &Arc<SymmetricHeap>) -> bool {
        self.alloc.is_in(heap)
    }

    pub(crate) fn operand(&self) -> Operand<'_> {
        Operand { alloc: &self.alloc, dtype: T::DTYPE, shape: &self.shape, len: self.len, id: self.id }
    }
}

/// A window with its type erased, borrowed: what a collective checks at run time (borrowing
/// keeps a call from touching the window's reference count, which the ranks of `World::spmd`
/// share).
#[derive(Clone, Copy)]
pub(crate) struct Operand<'a> {
    pub(crate) alloc: &'a Arc<Allocation>,
    pub(crate) dtype: DType,
    pub(crate) shape: &'a Shape,
    /// The shape's element count.
    pub(crate) len: usize,
    /// The view's identity ([`Window`]'s `id`).
    pub(crate) id: u64,
}

impl Operand<'_> {
    pub(crate) fn name(&self) -> &str {
        self.alloc.name()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn describe(&self) -> String {
        format!("{} {:?}", self.dtype, self.shape.0)
    }

    /// Elements of one row: every extent after the first (1 for a one-dimensional view).
    pub(crate) fn row_len(&self) -> usize {
        self.shape.0.get(1..).map_or(1, |rest| rest.iter().product())
    }
}
