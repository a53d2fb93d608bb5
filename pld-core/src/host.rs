//! [`Host`]: the single controller of a world. It allocates windows, stages host data in and
//! out, dispatches kernels and calls collectives; work is queued on the ranks asynchronously and
//! [`Host::sync`] waits for it.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::Arc;

use pld_model::{Collective, Element};

use crate::device::Kernel;
use crate::window::{Allocation, Buffer, Shape};
use crate::world::{Task, label};
use crate::{Error, Result, Window, World};

/// The host scope of a [`World`], opened by [`World::host`].
///
/// Windows allocated here are freed when the scope ends; dropping the scope first waits for all
/// queued work. Not `Send`/`Sync`: one thread drives one world, so every rank sees the
/// collectives in the same order.
pub struct Host<'w> {
    world: &'w World,
    owned: RefCell<Vec<Arc<Allocation>>>,
    auto_names: Cell<usize>,
    _single_thread: PhantomData<*const ()>,
}

impl<'w> Host<'w> {
    pub(crate) fn new(world: &'w World) -> Host<'w> {
        Host { world, owned: RefCell::new(Vec::new()), auto_names: Cell::new(0), _single_thread: PhantomData }
    }

    /// The world this scope drives.
    pub fn world(&self) -> &'w World {
        self.world
    }

    /// Number of ranks.
    pub fn nranks(&self) -> usize {
        self.world.nranks()
    }

    /// Allocates `bytes` per rank at one offset on every rank, zeroed, named for messages.
    pub fn alloc(&self, name: &str, bytes: usize) -> Result<Buffer<'_>> {
        let alloc = Allocation::new(self.world.shared(), name, bytes)?;
        self.owned.borrow_mut().push(Arc::clone(&alloc));
        Ok(Buffer::new(alloc))
    }

    /// Allocates a window of exactly `shape` elements of `T` per rank and views it.
    pub fn window<T: Element>(&self, name: &str, shape: impl Into<Shape>) -> Result<Window<'_, T>> {
        let shape = shape.into();
        self.alloc(name, shape.len().saturating_mul(T::DTYPE.size()))?.view(shape)
    }

    /// Allocates a signal: one i32 credit cell per rank, zeroed, reusable by any number of
    /// collectives in sequence (every builtin leaves it all zero).
    pub fn signal(&self, name: &str) -> Result<Window<'_, i32>> {
        self.window(name, [Collective::signal_cells(self.nranks())])
    }

    /// A signal owned by one call (not by this scope): freed as soon as the call's tasks finish,
    /// so a call in a loop does not grow memory.
    pub(crate) fn call_signal(&self, collective: Collective) -> Result<Arc<Allocation>> {
        let n = self.auto_names.get();
        self.auto_names.set(n + 1);
        let name = format!("__auto_{}_{n}", collective.name());
        Allocation::new(self.world.shared(), &name, 4 * Collective::signal_cells(self.nranks()))
    }

    /// Staging and kernels may only touch windows of this scope's world.
    fn check_world<T: Element>(&self, window: &Window<'_, T>) -> Result<()> {
        if !window.belongs_to(self.world.shared()) {
            return Err(foreign_window(format!("staging `{}`", window.name()), "window", window.name()));
        }
        Ok(())
    }

    fn check_rank(&self, rank: usize, what: impl FnOnce() -> String) -> Result<()> {
        if rank >= self.nranks() {
            return Err(Error::RankOutOfRange { what: what(), rank, nranks: self.nranks() });
        }
        Ok(())
    }

    /// Copies host data into rank `rank`'s view, in order with the rank's queued work.
    pub fn write<T: Element>(&self, window: &Window<'_, T>, rank: usize, data: &[T]) -> Result<()> {
        self.check_world(window)?;
        self.check_rank(rank, || format!("writing `{}`", window.name()))?;
        if data.len() != window.len() {
            return Err(Error::StagingSize {
                buffer: window.name().to_owned(),
                rank,
                expected: window.len(),
                found: data.len(),
            });
        }
        let bytes: Vec<u8> = bytemuck::cast_slice(data).to_vec();
        let offset = window.offset();
        let call = label(format!("write of `{}` on rank {rank}", window.name()));
        self.world.enqueue(
            rank,
            Task {
                call,
                signal: None,
                work: Box::new(move |state| {
                    // SAFETY: the view lies inside the allocation, which lives while the host
                    // scope does; this rank's queue orders the copy with its kernels.
                    unsafe {
                        std::ptr::copy_nonoverlapping(bytes.as_ptr(), state.local_base().add(offset), bytes.len())
                    };
                    Ok(())
                }),
            },
        );
        Ok(())
    }

    /// Waits for all queued work, then copies rank `rank`'s view out.
    pub fn read<T: Element>(&self, window: &Window<'_, T>, rank: usize) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); window.len()];
        self.read_into(window, rank, &mut out)?;
        Ok(out)
    }

    /// Waits for all queued work, then copies rank `rank`'s view into `out`.
    pub fn read_into<T: Element>(&self, window: &Window<'_, T>, rank: usize, out: &mut [T]) -> Result<()> {
        self.check_world(window)?;
        self.check_rank(rank, || format!("reading `{}`", window.name()))?;
        if out.len() != window.len() {
            return Err(Error::StagingSize {
                buffer: window.name().to_owned(),
                rank,
                expected: window.len(),
                found: out.len(),
            });
        }
        self.sync()?;
        let src = self.world.shared().heap.base(rank);
        // SAFETY: every queue is drained, so no kernel touches the window; the view lies inside
        // its allocation and `out` holds exactly its bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                src.add(window.offset()),
                bytemuck::cast_slice_mut::<T, u8>(out).as_mut_ptr(),
                window.bytes(),
            )
        };
        Ok(())
    }

    /// The ranks of the world, `0..nranks`.
    pub fn ranks(&self) -> std::ops::Range<usize> {
        0..self.nranks()
    }

    /// Queues `kernel` on rank `rank` with `args` (the kernel's argument struct as 64-bit words).
    ///
    /// # Safety
    /// `args` must be what the kernel expects: the kernel reads them, and any window offsets
    /// among them, without knowing their meaning.
    pub unsafe fn launch(&self, kernel: &Kernel, rank: usize, args: &[u64]) -> Result<()> {
        let mut words = crate::dsl::KernelArgs::new();
        words.words = args.to_vec();
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_args(kernel, rank, words) }
    }

    /// Queues `kernel` on rank `device` with arguments built for it; waits for it when it
    /// writes host memory.
    ///
    /// # Safety
    /// `args` must match the kernel's parameters (the launchers `#[pld::program]` generates
    /// guarantee it).
    pub unsafe fn launch_args(&self, kernel: &Kernel, device: usize, args: crate::dsl::KernelArgs<'_>) -> Result<()> {
        self.check_rank(device, || format!("launching {}", kernel.name()))?;
        for alloc in &args.windows {
            if !Arc::ptr_eq(alloc.shared(), self.world.shared()) {
                return Err(foreign_window(format!("launch of {}", kernel.name()), "window", alloc.name()));
            }
        }
        let blocking = args.blocking;
        let crate::dsl::KernelArgs { words, copies, windows, .. } = args;
        let kernel = kernel.clone();
        let call = label(format!("kernel {} on rank {device}", kernel.name()));
        let label = Arc::clone(&call);
        // The host pointers in `words` stay valid: copies travel with the task, and a writable
        // host tensor is borrowed until the blocking wait below returns.
        self.world.enqueue(
            device,
            Task {
                call,
                signal: None,
                work: Box::new(move |state| {
                    let _alive = (&copies, &windows);
                    state.run_kernel(kernel.function(), words.as_ptr().cast(), 0, &label)
                }),
            },
        );
        if blocking { self.sync() } else { Ok(()) }
    }

    pub(crate) fn enqueue(&self, rank: usize, task: Task) {
        self.world.enqueue(rank, task);
    }

    /// Waits until every rank finished its queued work. Returns the first failure since the
    /// last sync (a failure on one rank ends the call on every rank), after resetting the
    /// signals the failed calls left dirty so the world stays usable.
    pub fn sync(&self) -> Result<()> {
        self.world.sync()
    }

    /// Ends the scope: waits for queued work and reports its outcome, then frees the windows.
    pub fn finish(self) -> Result<()> {
        self.sync()
    }
}

impl Drop for Host<'_> {
    fn drop(&mut self) {
        // Outcomes not collected by `sync`/`finish` are dropped with the scope.
        let _ = self.world.sync();
        self.owned.borrow_mut().clear();
        self.world.shared().host_active.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// A window of another world passed to this one.
pub(crate) fn foreign_window(call: String, role: &'static str, buffer: &str) -> Error {
    Error::BadOperand {
        call,
        role,
        buffer: buffer.to_owned(),
        expected: "a window of this world".into(),
        found: "a window of another world".into(),
    }
}
