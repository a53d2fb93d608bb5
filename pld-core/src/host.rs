//! [`Host`]: the controller of a world's ranks. It allocates windows, stages host data in and
//! out, dispatches kernels and calls collectives; work is queued on the ranks asynchronously and
//! [`Host::sync`] waits for it. One host drives every rank ([`World::host`]), or each rank has
//! its own ([`World::spmd`]), as each process does under MPI.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use pld_model::{Collective, Element};

use crate::call::{Label, SignalCells};
use crate::comm::Comm;
use crate::device::Kernel;
use crate::error::{Error, Result};
use crate::memory::{Allocation, Buffer, Shape, Window};
use crate::rank::{Job, KernelOf, KernelRef, RankState, Task, Work};
use crate::section::Section;
use crate::transport::AllocationClaim;
use crate::world::World;

impl World {
    /// Opens the host scope: the single controller that allocates windows, stages data and
    /// calls collectives. One at a time per world ([`Error::WorldBusy`] otherwise).
    pub fn host(&self) -> Result<Host<'_>> {
        if self.shared().host_active.swap(true, Ordering::AcqRel) {
            return Err(Error::WorldBusy);
        }
        Ok(Host::new(self, self.local_ranks(), None))
    }
}

/// The host scope of a [`World`], opened by [`World::host`] (driving every rank) or given to
/// each rank's host function by [`World::spmd`] (driving that rank).
///
/// Windows allocated here are freed when the scope ends; dropping the scope first waits for all
/// queued work. Not `Send`/`Sync`: one thread drives its ranks, so they see the collectives in
/// the order it calls them.
pub struct Host<'w> {
    world: &'w World,
    ranks: Range<usize>,
    /// The SPMD section this host is one rank's part of; `None` for [`World::host`].
    section: Option<Arc<Section>>,
    allocations: Cell<u64>,
    owned: RefCell<Vec<Arc<Allocation>>>,
    /// The windows of collective calls queued and maybe not finished, with the call's number:
    /// released once every rank of this host is past it.
    in_flight: RefCell<VecDeque<(u64, Arc<Allocation>)>>,
    auto_names: Cell<usize>,
    /// The device state this host runs its rank's calls with when it runs them itself.
    inline: RefCell<Option<RankState>>,
    /// The failure this host's work met: every later call returns it until the host is
    /// dropped (a world-wide reset clears the ranks, not what this host's program saw).
    failed: RefCell<Option<Error>>,
    /// Whether `failed` holds an error: every call asks, and a `Cell` is read without the
    /// borrow's check and count.
    failed_now: Cell<bool>,
    /// The groups' communicators this host's calls ran in, kept until its work is done (their
    /// calls address them directly).
    comms: RefCell<Vec<Arc<Comm>>>,
    /// Sends and receives called since this host last queued anything else: queued together,
    /// one batch per rank, before its next other call, read or sync (see `collective::p2p`).
    p2p: RefCell<crate::collective::Collected>,
    /// Whether `p2p` may hold sends or receives (set where they are collected, cleared where
    /// they are queued): every other call asks.
    p2p_pending: Cell<bool>,
    /// The labels traces show of this host's calls, by call site (and group), operands, size
    /// and algorithm (see `Host::traced_label`).
    pub(crate) traced: RefCell<Vec<crate::collective::TracedBySite>>,
    /// The collective calls planned at each call site, for the site's next call (see
    /// `collective::site`).
    pub(crate) sites: RefCell<crate::collective::SitePlans>,
    _single_thread: PhantomData<*const ()>,
}

impl<'w> Host<'w> {
    pub(crate) fn new(world: &'w World, ranks: Range<usize>, section: Option<Arc<Section>>) -> Host<'w> {
        Host {
            world,
            ranks,
            section,
            allocations: Cell::new(0),
            comms: RefCell::new(Vec::new()),
            owned: RefCell::new(Vec::new()),
            in_flight: RefCell::new(VecDeque::new()),
            auto_names: Cell::new(0),
            inline: RefCell::new(None),
            failed: RefCell::new(None),
            failed_now: Cell::new(false),
            p2p: RefCell::new(crate::collective::Collected::default()),
            p2p_pending: Cell::new(false),
            traced: RefCell::new(Vec::new()),
            sites: RefCell::new(crate::collective::SitePlans::default()),
            _single_thread: PhantomData,
        }
    }

    /// The rank this host drives, when it drives one: a host of [`World::spmd`], or of an MPI
    /// world (each process drives its own rank); `None` when it drives every rank.
    pub fn rank(&self) -> Option<usize> {
        (self.ranks.len() == 1 && self.nranks() > 1 || self.section.is_some()).then_some(self.ranks.start)
    }

    /// A window of this host's ranks: allocated here, or collectively in an SPMD section.
    pub(crate) fn allocate(&self, name: &str, bytes: usize) -> Result<Arc<Allocation>> {
        self.check_healthy()?;
        let index = self.allocations.get();
        self.allocations.set(index + 1);
        match &self.section {
            None => {
                let shared = self.world.shared();
                let alloc = Allocation::new(shared.heap(), name, bytes);
                // Across processes, allocation is collective: no peer may credit a new window
                // before its owner has zeroed it, and every rank must allocate the same one. A
                // rank that could not allocate still takes part, so every rank hears why.
                if let Some(agree) = shared.fabric.agree_on_allocation {
                    // The agreement waits for every process's host, and a host waiting in it
                    // holds a core: with its rank's calls still queued, the rank's worker could
                    // get that core only at the next scheduler tick (4 ms a call, measured with
                    // PLD_INLINE=0 on one process). Those calls never wait on this agreement
                    // (every peer issued them before reaching it), so let them finish first.
                    shared.wait_drained(self.ranks.clone());
                    let failed = alloc.as_ref().err().map(|_| shared.heap().largest_free());
                    let claim = AllocationClaim { rank: self.ranks.start, index, name, bytes, failed };
                    let agreed = agree(&claim, shared.settings.timeout);
                    let alloc = alloc?;
                    agreed?;
                    return Ok(alloc);
                }
                alloc
            }
            Some(section) => section.alloc(self.world, self.ranks.start, index, name, bytes),
        }
    }

    /// Keeps a group's communicator alive until this host's work is done.
    pub(crate) fn keep_comm(&self, comm: &Arc<Comm>) {
        let mut kept = self.comms.borrow_mut();
        if !kept.iter().any(|c| Arc::ptr_eq(c, comm)) {
            kept.push(Arc::clone(comm));
        }
    }

    /// The failure this host's work met, if any: once one did, every call returns it.
    #[inline]
    pub(crate) fn check_healthy(&self) -> Result<()> {
        if !self.failed_now.get() {
            return Ok(());
        }
        match &*self.failed.borrow() {
            Some(error) => Err(Self::failed_again(error)),
            None => Ok(()),
        }
    }

    /// Whether this host's work met a failure (see [`Host::check_healthy`]).
    #[inline]
    pub(crate) fn has_failed(&self) -> bool {
        self.failed_now.get()
    }

    /// The error a failed host gives every later call (apart: the healthy path is inline).
    #[cold]
    #[inline(never)]
    fn failed_again(error: &Error) -> Error {
        error.clone()
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
        let alloc = self.allocate(name, bytes)?;
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

    /// A window owned by one call (a staged tensor): not kept by this scope, so it is freed as
    /// soon as the call's tasks are past it and the caller dropped it.
    pub(crate) fn call_window<T: Element>(&self, name: &str, shape: impl Into<Shape>) -> Result<Window<'_, T>> {
        let shape = shape.into();
        let alloc = self.allocate(name, shape.len().saturating_mul(T::DTYPE.size()))?;
        Buffer::new(alloc).view(shape)
    }

    /// A signal owned by one call (not by this scope): freed as soon as the call's tasks finish,
    /// so a call in a loop does not grow memory.
    pub(crate) fn call_signal(&self, collective: Collective) -> Result<Arc<Allocation>> {
        let n = self.auto_names.get();
        self.auto_names.set(n + 1);
        let name = format!("__auto_{}_{n}", collective.name());
        self.allocate(&name, 4 * Collective::signal_cells(self.nranks()))
    }

    /// Staging and kernels may only touch windows of this scope's world.
    fn check_world<T: Element>(&self, window: &Window<'_, T>) -> Result<()> {
        self.check_healthy()?;
        if !window.belongs_to(self.world.shared().heap()) {
            return Err(foreign_window(format!("staging `{}`", window.name()), "window", window.name()));
        }
        Ok(())
    }

    fn check_rank(&self, rank: usize, what: impl FnOnce() -> String) -> Result<()> {
        if rank >= self.nranks() {
            return Err(Error::RankOutOfRange { what: what(), rank, nranks: self.nranks() });
        }
        if !self.ranks.contains(&rank) {
            return Err(Error::RankNotOwned { what: what(), rank, owned: self.ranks() });
        }
        Ok(())
    }

    /// Copies host data into rank `rank`'s view, in order with the rank's queued work.
    pub fn write<T: Element>(&self, window: &Window<'_, T>, rank: usize, data: &[T]) -> Result<()> {
        self.write_ordered(window, rank, data, true)
    }

    /// [`Host::write`] into a window made for one call that no send or receive collected so
    /// far can touch: it goes ahead of them, so staging a tensor for a send does not end the
    /// batch of sends and receives it joins.
    pub(crate) fn write_fresh<T: Element>(&self, window: &Window<'_, T>, rank: usize, data: &[T]) -> Result<()> {
        self.write_ordered(window, rank, data, false)
    }

    fn write_ordered<T: Element>(
        &self,
        window: &Window<'_, T>,
        rank: usize,
        data: &[T],
        after_p2p: bool,
    ) -> Result<()> {
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
        let text = format!("write of `{}` on rank {rank}", window.name());
        let call = Label::work("staging", format!("write `{}`", window.name()), text, None);
        if after_p2p {
            self.flush_p2p();
        }
        self.submit_now(
            rank,
            &call,
            0,
            None,
            Box::new(move |state| {
                // SAFETY: the view lies inside the allocation, which lives while the host
                // scope does; this rank's queue orders the copy with its kernels.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), state.local_base().add(offset), bytes.len()) };
                Ok(())
            }),
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
        let started = self.trace_start();
        self.sync()?;
        let src = self.world.shared().heap().base(rank);
        // SAFETY: every queue is drained, so no kernel touches the window; the view lies inside
        // its allocation and `out` holds exactly its bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                src.add(window.offset()),
                bytemuck::cast_slice_mut::<T, u8>(out).as_mut_ptr(),
                window.bytes(),
            )
        };
        self.trace_span(started, || format!("read `{}` of rank {rank}", window.name()));
        Ok(())
    }

    /// The start of a span of host work when a trace is recorded.
    fn trace_start(&self) -> Option<u64> {
        self.world.shared().tracer.tracing().then(crate::trace::clock::ticks)
    }

    /// Records a span of host work on this host's track.
    fn trace_span(&self, started: Option<u64>, name: impl FnOnce() -> String) {
        if let Some(start) = started {
            self.world.shared().tracer.host_span(name(), self.rank(), start);
        }
    }

    /// The ranks this host drives: `0..nranks` for [`World::host`], its own rank for a host
    /// of [`World::spmd`].
    pub fn ranks(&self) -> Range<usize> {
        self.ranks.clone()
    }

    /// Queues `kernel` on rank `rank` with `args` (the kernel's argument struct as 64-bit words).
    ///
    /// # Safety
    /// `args` must be what the kernel expects: the kernel reads them, and any window offsets
    /// among them, without knowing their meaning.
    #[track_caller]
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
    #[track_caller]
    pub unsafe fn launch_args(&self, kernel: &Kernel, device: usize, args: crate::dsl::KernelArgs<'_>) -> Result<()> {
        let at = std::panic::Location::caller();
        let name = kernel.user_name();
        self.check_healthy()?;
        self.check_rank(device, || format!("launching kernel `{name}` at {}:{}", at.file(), at.line()))?;
        for alloc in &args.windows {
            if !alloc.is_in(self.world.shared().heap()) {
                let what = format!("launch of kernel `{name}` at {}:{}", at.file(), at.line());
                return Err(foreign_window(what, "window", alloc.name()));
            }
        }
        let blocking = args.blocking;
        let crate::dsl::KernelArgs { words, copies, windows, .. } = args;
        let kernel = kernel.clone();
        let text = format!("kernel `{name}` at {}:{}:{} on rank {device}", at.file(), at.line(), at.column());
        let call =
            Label::work("kernel", format!("kernel `{name}`"), text, Some(format!("{}:{}", at.file(), at.line())));
        let label = call.clone();
        // The host pointers in `words` stay valid: copies travel with the task, and a writable
        // host tensor is borrowed until the blocking wait below returns.
        self.submit(
            device,
            &call,
            0,
            None,
            Box::new(move |state| {
                let _alive = (&copies, &windows);
                let of = KernelOf::User(kernel.source());
                state.run_kernel(kernel.function(), words.as_ptr().cast(), 0, &label, Default::default(), of)
            }),
        );
        if blocking { self.sync() } else { Ok(()) }
    }

    /// Submits `work` for `rank`: run right here when this host runs the rank's calls itself
    /// ([`Host::inline_state`], the one place that decides it, for work and collectives alike),
    /// else on the rank's queue. Returns whether it was queued.
    pub(crate) fn submit(&self, rank: usize, call: &Label, seq: u64, signal: Option<SignalCells>, work: Work) -> bool {
        self.flush_p2p();
        self.submit_now(rank, call, seq, signal, work)
    }

    /// [`Host::submit`] without queueing the collected sends and receives first.
    fn submit_now(&self, rank: usize, call: &Label, seq: u64, signal: Option<SignalCells>, work: Work) -> bool {
        if let Some(mut state) = self.inline_state(rank)
            && let Some(state) = state.as_mut()
        {
            let counted = self.world.shared().tuning.adaptive;
            self.counted_while(state, counted, |state, shared| {
                state.run(Task { call: call.clone(), seq, signal, job: Job::Work(work) }, shared)
            });
            return false;
        }
        self.world.enqueue(rank, Task { call: call.clone(), seq, signal, job: Job::Work(work) });
        true
    }

    /// Submits a collective's kernel for `rank`, after the collected sends and receives: run
    /// right here when this host runs the rank's calls itself ([`Host::inline_state`]), else
    /// queued; returns whether it was queued. (Inline, the kernel passed as itself: through the
    /// function other work takes and an enum of the two, a small collective's host path took
    /// some 30 instructions more.)
    #[inline(always)]
    pub(crate) fn submit_kernel(
        &self,
        rank: usize,
        call: &Label,
        seq: u64,
        signal: Option<SignalCells>,
        kernel: KernelRef<'_>,
    ) -> bool {
        self.flush_p2p();
        let shared = self.world.shared();
        if let Some(mut state) = self.inline_state(rank)
            && let Some(state) = state.as_mut()
        {
            // Busy while it runs, as a queued task is (see `Shared::busy`); except a collective
            // of every rank of the world, which no other call runs beside and which is crowded
            // by its own size: the count is one cache line every rank updates twice a call, and
            // at 4 ranks on 2 cores those updates were a tenth of a small call's time.
            let counted = shared.tuning.adaptive && kernel.comm.comm().size() != shared.world.size();
            // A collective's arguments stay borrowed: copying them into a task cost more than a
            // small collective's transfer.
            self.counted_while(state, counted, |state, shared| {
                state.run_kernel_now(call, seq, signal, &kernel, shared)
            });
            return false;
        }
        self.world.enqueue(rank, Task { call: call.clone(), seq, signal, job: Job::Kernel(kernel.to_owned()) });
        true
    }

    /// The state of `rank` when this host runs the rank's calls itself, right now: it drives
    /// that rank alone, runs calls itself and nothing is queued on the rank (see
    /// [`WorldBuilder::inline`](crate::WorldBuilder::inline)); made on first use, so the
    /// `Option` is always `Some`. (Not a `RefMut::map` to the state: that was a call out of
    /// line per call, as was the drained check of a range of one rank; together some 40
    /// instructions of a small call.)
    #[inline(always)]
    fn inline_state(&self, rank: usize) -> Option<std::cell::RefMut<'_, Option<RankState>>> {
        let shared = self.world.shared();
        if !(shared.settings.inline && self.ranks.len() == 1 && shared.ranks[rank].drained()) {
            return None;
        }
        let mut state = self.inline.borrow_mut();
        if state.is_none() {
            *state = Some(Self::new_inline_state(rank, shared));
        }
        Some(state)
    }

    /// A rank's state for this host to run its calls itself, made once.
    #[cold]
    #[inline(never)]
    fn new_inline_state(rank: usize, shared: &Arc<crate::shared::Shared>) -> RankState {
        RankState::new(rank, shared)
    }

    /// Runs `work` on this host's inline rank with `state.counted` set, counted busy meanwhile
    /// where `counted`.
    #[inline(always)]
    fn counted_while(
        &self,
        state: &mut RankState,
        counted: bool,
        work: impl FnOnce(&mut RankState, &crate::shared::Shared),
    ) {
        let shared = self.world.shared();
        state.counted = counted;
        if counted {
            shared.busy.0.fetch_add(1, Ordering::Relaxed);
        }
        work(state, shared);
        if counted {
            shared.busy.0.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The sends and receives collected, not yet queued: queued as a batch before this host's
    /// next other work.
    pub(crate) fn collected_p2p(&self) -> std::cell::RefMut<'_, crate::collective::Collected> {
        self.p2p_pending.set(true);
        self.p2p.borrow_mut()
    }

    /// Queues the sends and receives collected so far (the check inline: every call makes it).
    #[inline]
    fn flush_p2p(&self) {
        if self.p2p_pending.get() {
            self.queue_collected_p2p();
        }
    }

    /// [`Host::flush_p2p`] with sends or receives collected.
    #[cold]
    #[inline(never)]
    fn queue_collected_p2p(&self) {
        self.p2p_pending.set(false);
        let batch = self.p2p.borrow_mut().take();
        if !batch.is_empty() {
            self.queue_p2p(batch);
        }
    }

    /// Holds `windows` until every rank of this host is past collective call `seq`; now and
    /// then releases the windows of calls all ranks are past (a host that never syncs does not
    /// grow without bound).
    pub(crate) fn hold_in_flight(&self, seq: u64, windows: impl IntoIterator<Item = Arc<Allocation>>) {
        let mut in_flight = self.in_flight.borrow_mut();
        in_flight.extend(windows.into_iter().map(|w| (seq, w)));
        if in_flight.len() < 4096 || !seq.is_multiple_of(256) {
            return;
        }
        let shared = self.world.shared();
        // After a failure, a call's signal is reset at the next sync: its window must live until then.
        if shared.aborted() {
            return;
        }
        if shared.fabric.agree_on_allocation.is_some() {
            // Across processes the release point must not depend on how far each rank got (the
            // allocators would diverge): wait until this host's calls are done, release them all.
            drop(in_flight);
            shared.wait_drained(self.ranks.clone());
            self.in_flight.borrow_mut().clear();
            return;
        }
        let past = self.ranks().map(|r| shared.ranks[r].past.0.load(Ordering::Acquire)).min();
        while in_flight.front().is_some_and(|(s, _)| Some(*s) <= past) {
            in_flight.pop_front();
        }
    }

    /// Releases the windows of calls in flight once a sync drained the queues; after a failure
    /// not yet reset (a host of `World::spmd`), the world keeps them until it resets.
    fn release_in_flight(&self) {
        let mut in_flight = self.in_flight.borrow_mut();
        let shared = self.world.shared();
        if shared.aborted() {
            shared.keep_until_reset(in_flight.drain(..).map(|(_, w)| w));
        } else {
            in_flight.clear();
        }
    }

    /// Waits until every rank finished its queued work. Returns the first failure since the
    /// last sync (a failure on one rank ends the call on every rank), after resetting the
    /// signals the failed calls left dirty so the world stays usable.
    ///
    /// A host of [`World::spmd`] waits for its own rank only and resets nothing (its peers may
    /// still be running): after a failure, its later calls fail with the same root cause until
    /// the section ends.
    ///
    /// Once a sync returned a failure, the host is failed: every later call on it (a sync, a
    /// read, a collective) returns that failure until the host is dropped, so no program reads
    /// data a failed call never produced. Open a new host to go on.
    pub fn sync(&self) -> Result<()> {
        self.check_healthy()?;
        self.flush_p2p();
        let started = self.trace_start();
        let outcome =
            if self.ranks == (0..self.nranks()) { self.world.sync() } else { self.world.sync_rank(self.ranks.start) };
        self.trace_span(started, || "sync".to_owned());
        self.release_in_flight();
        if let Err(error) = &outcome {
            *self.failed.borrow_mut() = Some(error.clone());
            self.failed_now.set(true);
        }
        outcome
    }

    /// Ends the scope: waits for queued work and reports its outcome, then frees the windows.
    pub fn finish(self) -> Result<()> {
        self.sync()
    }
}

impl Drop for Host<'_> {
    fn drop(&mut self) {
        // Outcomes not collected by `sync`/`finish` are dropped with the scope (a failed
        // host's queues still drain before its windows go).
        self.failed.borrow_mut().take();
        self.failed_now.set(false);
        let _ = self.sync();
        let owned = std::mem::take(&mut *self.owned.borrow_mut());
        if self.world.shared().aborted() {
            self.world.shared().keep_until_reset(owned);
        }
        if self.section.is_none() {
            self.world.shared().host_active.store(false, Ordering::Release);
        }
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
