//! Procedural macro entry points of pld: thin wrappers over `pld-syntax`, where the parsing,
//! checking and generation live as plain `TokenStream -> TokenStream` functions.
//!
//! Use them through the `pld` crate: `#[pld::program]`, `pld::all_reduce!` and so on.

use proc_macro::TokenStream;

/// Marks a module as a pld program.
///
/// Inside it, `#[pld::host]` functions orchestrate the world: they allocate windows
/// ([`window!`], [`signal!`]), stage host data in and out ([`stage_in!`], [`stage_out!`]) and
/// call collectives ([`all_reduce!`] ...), which are checked at compile time against the
/// collective contracts. `ranks()` is `0..nranks` and `world_size()` the rank count.
///
/// The module gains a `Program<'w>` type with one method per host function, and
/// `load(&World) -> pld::Result<Program>`. A method runs its host function in a host scope of
/// its own, returns once every rank is done, and returns `pld::Result<R>` where `R` is the
/// function's return type. Each collective call site without `signal = s` gets a signal
/// allocated once, at the start of the function, bound as `__auto_<collective>_<n>`.
///
/// ```
/// #[pld::program]
/// mod ring_demo {
///     pub const SIZE: usize = 8;
///
///     /// Sums every rank's row and returns rank 0's result.
///     #[pld::host]
///     pub fn run(inputs: &pld::Tensor<f32>) -> Vec<f32> {
///         let data = window!(f32, [1, SIZE]);
///         for r in ranks() {
///             stage_in!(data, r, inputs.row(r));
///         }
///         all_reduce!(data, op = sum, mode = ring, nranks = 4);
///         let mut out = vec![0.0; SIZE];
///         stage_out!(data, 0, out);
///         out
///     }
/// }
///
/// let inputs = pld::Tensor::<f32>::from_fn([4, 1, ring_demo::SIZE], |[r, _, i]| (r * 100 + i) as f32);
/// let world = pld::World::local(4)?;
/// let program = ring_demo::load(&world)?;
/// assert_eq!(program.run(&inputs)?[1], 604.0); // (0 + 100 + 200 + 300) + 4 * 1
/// # Ok::<(), pld::Error>(())
/// ```
#[proc_macro_attribute]
pub fn program(attr: TokenStream, item: TokenStream) -> TokenStream {
    pld_syntax::program_macro(attr.into(), item.into()).into()
}

/// Marks a function of a [`macro@program`] module as host code: it runs once, on the host, for the
/// whole world. Outside a program module it is an error.
///
/// ```
/// #[pld::program]
/// mod demo {
///     #[pld::host]
///     pub fn nranks() -> usize {
///         barrier!();
///         world_size()
///     }
/// }
/// let world = pld::World::local(3)?;
/// assert_eq!(demo::load(&world)?.nranks()?, 3);
/// # Ok::<(), pld::Error>(())
/// ```
#[proc_macro_attribute]
pub fn host(_attr: TokenStream, item: TokenStream) -> TokenStream {
    pld_syntax::host_outside_program(item.into()).into()
}

/// Marks a function of a [`macro@program`] module as a kernel: device code, in pld's kernel
/// language (a Rust subset), compiled by the crate's build script into the device binary and
/// queued on a rank with [`launch!`]. Outside a program module it is an error.
///
/// Parameters: `&Tensor<T>` / `&mut Tensor<T>` (one rank's host data), `&DistributedTensor<T>` /
/// `&mut DistributedTensor<T>` (a window), integer and float scalars. Statements: `let [mut]`,
/// assignments, `for i in a..b`, `if`/`else`, `return;`. Primitives: `rank()`, `nranks()`,
/// `len(t)`, `load`, `store`, `fill`, `add` `sub` `mul` `div` `max` `min` on tiles,
/// `remote_load`, `remote_store` (plain or `AtomicAdd`), `put`, `get`, `notify` (`Set` or
/// `AtomicAdd`), `wait` (`Eq` or `Ge`). Offsets and lengths count elements.
///
/// ```ignore
/// #[pld::kernel]
/// pub fn publish(input: &Tensor<f32>, data: &mut DistributedTensor<f32>) {
///     let t = load(input, 0, len(input));
///     store(data, 0, t);
/// }
/// ```
///
/// (Kernels need a build script, so this example is not compiled here; the `pld-demo` crate
/// of the repository has complete, tested programs.)
#[proc_macro_attribute]
pub fn kernel(_attr: TokenStream, item: TokenStream) -> TokenStream {
    pld_syntax::kernel_outside_program(item.into()).into()
}

/// Outside a host function every DSL macro is an error naming itself; inside one,
/// `#[pld::program]` has already replaced it, so these bodies only ever produce that error.
macro_rules! host_only {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[proc_macro]
        pub fn $name(_input: TokenStream) -> TokenStream {
            pld_syntax::outside_host(stringify!($name)).into()
        }
    )*};
}

host_only! {
    /// `all_reduce!(target, op = sum|max|min|prod|avg|premul_sum(s), mode = mesh|ring|auto, nranks = N, signal = s)`:
    /// every rank's `target` becomes the reduction over all ranks, in place.
    ///
    /// Defaults: `op = sum`, `mode = mesh`. `nranks` (ring only) is a positive integer literal
    /// or const, checked against the world at run time. Ring mode takes any element count.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn max_of_ranks() -> Vec<i64> {
    ///         let data = window!(i64, [3]);
    ///         for r in ranks() {
    ///             stage_in!(data, r, [r as i64; 3]);
    ///         }
    ///         all_reduce!(data, op = max, mode = ring);
    ///         let mut out = vec![0; 3];
    ///         stage_out!(data, 1, out);
    ///         out
    ///     }
    /// }
    /// let world = pld::World::local(4)?;
    /// assert_eq!(demo::load(&world)?.max_of_ranks()?, vec![3, 3, 3]);
    /// # Ok::<(), pld::Error>(())
    /// ```
    all_reduce;

    /// `all_gather!(local, target, nranks = N, signal = s)`: row `p` of every rank's `target`
    /// (`[nranks, n]`) becomes rank `p`'s `local` (`n` elements). The windows must differ.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn gather() -> Vec<u8> {
    ///         let local = window!(u8, [2]);
    ///         let target = window!(u8, [3, 2]);
    ///         for r in ranks() {
    ///             stage_in!(local, r, [r as u8, 10 + r as u8]);
    ///         }
    ///         all_gather!(local, target);
    ///         let mut out = vec![0; 6];
    ///         stage_out!(target, 2, out);
    ///         out
    ///     }
    /// }
    /// let world = pld::World::local(3)?;
    /// assert_eq!(demo::load(&world)?.gather()?, vec![0, 10, 1, 11, 2, 12]);
    /// # Ok::<(), pld::Error>(())
    /// ```
    all_gather;

    /// `reduce_scatter!(target, op = sum|max|min|prod|avg|premul_sum(s), nranks = N, signal = s)`: `target` is
    /// `[nranks, n]`; row `r` of rank `r` becomes the reduction of row `r` over all ranks.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn scatter() -> Vec<f64> {
    ///         let data = window!(f64, [2, 2]);
    ///         for r in ranks() {
    ///             stage_in!(data, r, [1.0, 2.0, 3.0, 4.0]);
    ///         }
    ///         reduce_scatter!(data, op = prod);
    ///         let mut out = vec![0.0; 4];
    ///         stage_out!(data, 1, out);
    ///         out
    ///     }
    /// }
    /// let world = pld::World::local(2)?;
    /// assert_eq!(demo::load(&world)?.scatter()?[2..], [9.0, 16.0]); // rank 1 owns row 1
    /// # Ok::<(), pld::Error>(())
    /// ```
    reduce_scatter;

    /// `broadcast!(target, root = R, nranks = N, signal = s)`: every rank's `target` becomes the
    /// root's. `root` is required; a literal root must be 0 or more (and below a literal
    /// `nranks`); any root is checked against the world at run time.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn from(root: usize) -> Vec<i32> {
    ///         let data = window!(i32, [2]);
    ///         for r in ranks() {
    ///             stage_in!(data, r, [r as i32, -(r as i32)]);
    ///         }
    ///         broadcast!(data, root = root);
    ///         let mut out = vec![0; 2];
    ///         stage_out!(data, 0, out);
    ///         out
    ///     }
    /// }
    /// let world = pld::World::local(3)?;
    /// assert_eq!(demo::load(&world)?.from(2)?, vec![2, -2]);
    /// # Ok::<(), pld::Error>(())
    /// ```
    broadcast;

    /// `reduce!(target, root = R, op = sum|max|min|prod|avg|premul_sum(s), nranks = N, group = g, signal = s)`:
    /// the root's `target` becomes the reduction of every rank's `target` (in rank order, the
    /// bits all_reduce gives); the other ranks' `target` stays as it was. `root` is required.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn sums() -> (Vec<i32>, Vec<i32>) {
    ///         let data = window!(i32, [2]);
    ///         for r in ranks() {
    ///             stage_in!(data, r, [r as i32, 10]);
    ///         }
    ///         reduce!(data, root = 1);
    ///         let (mut root, mut other) = (vec![0; 2], vec![0; 2]);
    ///         stage_out!(data, 1, root);
    ///         stage_out!(data, 0, other);
    ///         (root, other)
    ///     }
    /// }
    /// let world = pld::World::local(3)?;
    /// assert_eq!(demo::load(&world)?.sums()?, (vec![3, 30], vec![0, 10])); // rank 0 untouched
    /// # Ok::<(), pld::Error>(())
    /// ```
    reduce;

    /// `gather!(local, target, root = R, nranks = N, group = g, signal = s)`: row `p` of the
    /// root's `target` (`[nranks, n]`) becomes rank `p`'s `local` (`n`); the other ranks'
    /// `target` stays as it was. `root` is required; the windows must differ.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn collect() -> Vec<u8> {
    ///         let local = window!(u8, [2]);
    ///         let target = window!(u8, [3, 2]);
    ///         for r in ranks() {
    ///             stage_in!(local, r, [r as u8, 10 + r as u8]);
    ///         }
    ///         gather!(local, target, root = 0);
    ///         let mut out = vec![0; 6];
    ///         stage_out!(target, 0, out);
    ///         out
    ///     }
    /// }
    /// let world = pld::World::local(3)?;
    /// assert_eq!(demo::load(&world)?.collect()?, vec![0, 10, 1, 11, 2, 12]);
    /// # Ok::<(), pld::Error>(())
    /// ```
    gather;

    /// `scatter!(input, target, root = R, nranks = N, group = g, signal = s)`: every rank's
    /// `target` (`n`) becomes row `rank` of the root's `input` (`[nranks, n]`); only the root's
    /// `input` is read. `root` is required; the windows must differ.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn deal() -> Vec<u8> {
    ///         let input = window!(u8, [3, 2]);
    ///         let target = window!(u8, [2]);
    ///         stage_in!(input, 2, [0, 10, 1, 11, 2, 12]);
    ///         scatter!(input, target, root = 2);
    ///         let mut out = vec![0; 2];
    ///         stage_out!(target, 1, out);
    ///         out
    ///     }
    /// }
    /// let world = pld::World::local(3)?;
    /// assert_eq!(demo::load(&world)?.deal()?, vec![1, 11]); // row 1 of rank 2's input
    /// # Ok::<(), pld::Error>(())
    /// ```
    scatter;

    /// `all_gather_v!(local, target, counts, nranks = N, group = g, signal = s)`: `local` is
    /// `[max_rows, ...]`, `target` `[nranks * max_rows, ...]`, `counts` `i32 [nranks]`. Each rank
    /// sends the first `counts[rank]` rows of its `local`; block `p` of every rank's `target`
    /// receives rank `p`'s rows and `counts[p]` their count. Rows past a count stay as they were;
    /// a count below 0 or above `max_rows` is an error naming the rank.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn ragged() -> (Vec<i32>, Vec<i32>) {
    ///         let local = window!(i32, [2, 1]);
    ///         let target = window!(i32, [4, 1]);
    ///         let counts = window!(i32, [2]);
    ///         for r in ranks() {
    ///             stage_in!(local, r, [10 * r as i32, 10 * r as i32 + 1]);
    ///             stage_in!(counts, r, [1, 2]); // rank 0 sends 1 row, rank 1 sends 2
    ///         }
    ///         all_gather_v!(local, target, counts);
    ///         let (mut rows, mut seen) = (vec![0; 4], vec![0; 2]);
    ///         stage_out!(target, 0, rows);
    ///         stage_out!(counts, 0, seen);
    ///         (rows, seen)
    ///     }
    /// }
    /// let world = pld::World::local(2)?;
    /// assert_eq!(demo::load(&world)?.ragged()?, (vec![0, 0, 10, 11], vec![1, 2]));
    /// # Ok::<(), pld::Error>(())
    /// ```
    all_gather_v;

    /// `all_to_all!(input, target, nranks = N, signal = s)`: both `[nranks, n]`; row `p` of rank
    /// `r`'s `target` becomes row `r` of rank `p`'s `input`. The windows must differ.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn exchange() -> Vec<u32> {
    ///         let input = window!(u32, [2, 1]);
    ///         let target = window!(u32, [2, 1]);
    ///         for r in ranks() {
    ///             stage_in!(input, r, [10 * r as u32, 10 * r as u32 + 1]);
    ///         }
    ///         all_to_all!(input, target);
    ///         let mut out = vec![0; 2];
    ///         stage_out!(target, 1, out);
    ///         out
    ///     }
    /// }
    /// let world = pld::World::local(2)?;
    /// assert_eq!(demo::load(&world)?.exchange()?, vec![1, 11]);
    /// # Ok::<(), pld::Error>(())
    /// ```
    all_to_all;

    /// `all_to_all_v!(input, target, send_counts, recv_counts, nranks = N, signal = s)`: `input`
    /// and `target` are `[nranks * max_rows, ...]`; block `d` of `input` holds up to `max_rows`
    /// rows for rank `d`, of which `send_counts[d]` (an `i32` window of `nranks` cells) move.
    /// `recv_counts[p]` receives how many rows came from rank `p`; rows past a count are left
    /// untouched. A count below 0 or above `max_rows` is an error naming the rank.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn exchange() -> (Vec<i32>, Vec<f32>) {
    ///         let input = window!(f32, [2 * 2, 1]);
    ///         let target = window!(f32, [2 * 2, 1]);
    ///         let send = window!(i32, [2]);
    ///         let recv = window!(i32, [2]);
    ///         for r in ranks() {
    ///             stage_in!(input, r, [1.0, 2.0, 3.0, 4.0]);
    ///             stage_in!(send, r, [1, 2]); // 1 row to rank 0, 2 rows to rank 1
    ///         }
    ///         all_to_all_v!(input, target, send, recv);
    ///         let (mut counts, mut rows) = (vec![0; 2], vec![0.0; 4]);
    ///         stage_out!(recv, 1, counts);
    ///         stage_out!(target, 1, rows);
    ///         (counts, rows)
    ///     }
    /// }
    /// let world = pld::World::local(2)?;
    /// assert_eq!(demo::load(&world)?.exchange()?, (vec![2, 2], vec![3.0, 4.0, 3.0, 4.0]));
    /// # Ok::<(), pld::Error>(())
    /// ```
    all_to_all_v;

    /// `barrier!()` or `barrier!(s)`: no rank passes until every rank has arrived.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn sync_twice() {
    ///         let s = signal!();
    ///         barrier!(s);
    ///         barrier!();
    ///     }
    /// }
    /// let world = pld::World::local(4)?;
    /// demo::load(&world)?.sync_twice()?;
    /// # Ok::<(), pld::Error>(())
    /// ```
    barrier;

    /// `send!(window, to = r, from = s, nranks = N, group = g)`: rank `s` sends its `window` to
    /// rank `r`, whose matching `recv!` (the next one from `s`, with as many elements of the same
    /// dtype) receives it; a mismatch is an error on both ranks. `from` may be left out on a host
    /// that drives one rank (MPI, `World::spmd`). Consecutive sends and receives are queued as one
    /// batch per rank and progress in any order, so every rank may send before it receives.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn ring() -> Vec<i32> {
    ///         let out = window!(i32, [2]);
    ///         let inbox = window!(i32, [2]);
    ///         let n = world_size();
    ///         for r in ranks() {
    ///             stage_in!(out, r, [r as i32, 10 * r as i32]);
    ///         }
    ///         for r in ranks() {
    ///             send!(out, to = (r + 1) % n, from = r); // every rank sends first
    ///         }
    ///         for r in ranks() {
    ///             recv!(inbox, from = (r + n - 1) % n, to = r);
    ///         }
    ///         let mut got = vec![0; 2];
    ///         stage_out!(inbox, 0, got);
    ///         got
    ///     }
    /// }
    /// let world = pld::World::local(3)?;
    /// assert_eq!(demo::load(&world)?.ring()?, vec![2, 20]); // rank 0 got rank 2's
    /// # Ok::<(), pld::Error>(())
    /// ```
    send;

    /// `recv!(target, from = s, to = r, nranks = N, group = g)`: rank `r`'s `target` receives
    /// the bytes of rank `s`'s matching `send!` (messages of one direction match in order). `to`
    /// may be left out on a host that drives one rank. See [`send!`] for an example.
    recv;

    /// `let name = window!(T, shape)`: a symmetric window of `shape` elements of `T` on every
    /// rank, zeroed, named `name` in messages, freed when the host function returns.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn zeros() -> Vec<pld::bf16> {
    ///         let w = window!(pld::bf16, [2, 3]);
    ///         let mut out = vec![pld::bf16::ONE; 6];
    ///         stage_out!(w, 0, out);
    ///         out
    ///     }
    /// }
    /// let world = pld::World::local(1)?;
    /// assert_eq!(demo::load(&world)?.zeros()?, vec![pld::bf16::ZERO; 6]);
    /// # Ok::<(), pld::Error>(())
    /// ```
    window;

    /// `let s = signal!()`: a signal (an `i32` window of one cell per rank) for
    /// `signal = s`; every collective leaves it all zero, so one serves any number of calls.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn reuse() {
    ///         let s = signal!();
    ///         let data = window!(f32, [4]);
    ///         for _ in 0..3 {
    ///             all_reduce!(data, signal = s);
    ///             barrier!(s);
    ///         }
    ///     }
    /// }
    /// let world = pld::World::local(2)?;
    /// demo::load(&world)?.reuse()?;
    /// # Ok::<(), pld::Error>(())
    /// ```
    signal;

    /// `stage_in!(window, rank, data)`: copies host data (anything that slices to `[T]` of the
    /// window's length) into `rank`'s view, in order with the rank's queued work.
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn round_trip(data: &[u64]) -> Vec<u64> {
    ///         let w = window!(u64, [data.len()]);
    ///         stage_in!(w, 1, data);
    ///         let mut out = vec![0; data.len()];
    ///         stage_out!(w, 1, out);
    ///         out
    ///     }
    /// }
    /// let world = pld::World::local(2)?;
    /// assert_eq!(demo::load(&world)?.round_trip(&[7, 8, 9])?, vec![7, 8, 9]);
    /// # Ok::<(), pld::Error>(())
    /// ```
    stage_in;

    /// `stage_out!(window, rank, data)`: waits for the queued work, then copies `rank`'s view
    /// into host data (anything that slices mutably to `[T]` of the window's length).
    ///
    /// ```
    /// #[pld::program]
    /// mod demo {
    ///     #[pld::host]
    ///     pub fn into_tensor(out: &mut pld::Tensor<i8>) {
    ///         let w = window!(i8, [4]);
    ///         for r in ranks() {
    ///             stage_in!(w, r, [1, 2, 3, 4]);
    ///         }
    ///         all_reduce!(w);
    ///         for r in ranks() {
    ///             stage_out!(w, r, out.row_mut(r));
    ///         }
    ///     }
    /// }
    /// let world = pld::World::local(2)?;
    /// let mut out = pld::Tensor::<i8>::zeros([2, 4]);
    /// demo::load(&world)?.into_tensor(&mut out)?;
    /// assert_eq!(out.row(1), &[2, 4, 6, 8]);
    /// # Ok::<(), pld::Error>(())
    /// ```
    stage_out;

    /// `launch!(kernel(args..), device = r)`: queues a kernel of the program on rank `r`.
    /// Arguments are checked by rustc against the kernel's parameters: host data (`&[T]` or
    /// anything that views as one) for `&Tensor<T>`, mutable host data for `&mut Tensor<T>`
    /// (the launch then waits for the kernel), a window for `&DistributedTensor<T>`, scalars.
    ///
    /// ```ignore
    /// for r in ranks() {
    ///     launch!(publish(inputs.row(r), data), device = r);
    /// }
    /// ```
    launch;
}
