//! The collective contract table: what each collective takes, what its signal looks like, and
//! which device kernels implement it. One table, read by the macros (grammar and compile-time
//! checks), the backend (which kernel variants to generate) and the runtime (run-time checks).

use std::fmt;

use crate::{DType, ReduceOp};

/// The host collectives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Collective {
    /// Every rank ends with the reduction of every rank's buffer.
    AllReduce,
    /// Row `p` of every rank's target receives rank `p`'s local buffer.
    AllGather,
    /// Row `r` of rank `r`'s target receives the reduction of row `r` over all ranks.
    ReduceScatter,
    /// Every rank's target receives the root's.
    Broadcast,
    /// Row `p` of rank `r`'s target receives row `r` of rank `p`'s input.
    AllToAll,
    /// Like all_to_all with a per-peer block of up to `max_rows` rows, of which only the counted
    /// rows move.
    AllToAllV,
    /// No rank leaves before every rank has arrived.
    Barrier,
    /// The root's target receives the reduction of every rank's; the others' stay as they were.
    Reduce,
    /// Row `p` of the root's target receives rank `p`'s local buffer.
    Gather,
    /// Every rank's target receives row `rank` of the root's input.
    Scatter,
    /// Like all_gather with a block of up to `max_rows` rows per rank, of which each rank sends
    /// its counted rows; every rank learns every count.
    AllGatherV,
    /// Point-to-point: the sending rank's window goes to one peer, whose matching
    /// [`Collective::Recv`] (the same number in that direction, count and dtype) takes it.
    Send,
    /// Point-to-point: the receiving rank's window becomes the matching send's.
    Recv,
}

/// The algorithm of an all_reduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum AllReduceMode {
    /// Every rank reads every peer (one-shot): best on shared memory and for small payloads.
    #[default]
    Mesh,
    /// Reduce-scatter then all-gather around the ring of ranks, neighbour to neighbour.
    Ring,
    /// The runtime picks mesh or ring per call from the call's size, rank count and launcher
    /// ([`AllReduceMode::resolve`]); the bits are the explicit mode's.
    Auto,
}

impl AllReduceMode {
    /// Every mode.
    pub const ALL: [AllReduceMode; 3] = [AllReduceMode::Mesh, AllReduceMode::Ring, AllReduceMode::Auto];

    /// The keyword used in source code (`mesh`, `ring`, `auto`).
    pub const fn name(self) -> &'static str {
        match self {
            AllReduceMode::Mesh => "mesh",
            AllReduceMode::Ring => "ring",
            AllReduceMode::Auto => "auto",
        }
    }

    /// The mode a call runs: an explicit one as given; `Auto` by the rule measured on this
    /// project's machines (docs/PERFORMANCE.md, "mode = auto"): mesh, whatever the size, the rank
    /// count and the launcher. Ring lost at every size on shared memory (local threads and MPI
    /// shared windows: 1.4x-7x slower at 2 and 4 ranks) and was not faster beyond noise over
    /// one-sided MPI on one node (mesh ahead at 64 MiB). `bytes`, `nranks` and `transport_only`
    /// (peers reached through one-sided MPI only) are the inputs a cross-host choice will need;
    /// every rank of a call resolves from the same values, so all run the same kernel.
    pub const fn resolve(self, bytes: usize, nranks: usize, transport_only: bool) -> AllReduceMode {
        let _ = (bytes, nranks, transport_only);
        match self {
            AllReduceMode::Auto => AllReduceMode::Mesh,
            explicit => explicit,
        }
    }

    /// Parses a name produced by [`AllReduceMode::name`].
    pub fn from_name(name: &str) -> Option<AllReduceMode> {
        AllReduceMode::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// The part a window plays in a collective call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowRole {
    /// Read and written in place (all_reduce, reduce_scatter, broadcast) or written (the others).
    Target,
    /// Read only: the input of all_to_all, all_to_all_v and scatter (the root's).
    Input,
    /// all_gather's and gather's per-rank contribution.
    Local,
    /// all_to_all_v: i32 `[nranks]`, rows this rank sends to each peer.
    SendCounts,
    /// all_to_all_v: i32 `[nranks]`, filled with the rows received from each peer.
    RecvCounts,
    /// all_gather_v: i32 `[nranks]`; entry `rank` holds the rows this rank sends, the call
    /// fills the others with the rows of each peer.
    Counts,
    /// send: the window whose bytes go to the peer (read only).
    Message,
}

impl WindowRole {
    /// The role's name, as used in messages and as the positional argument's name.
    pub const fn name(self) -> &'static str {
        match self {
            WindowRole::Target => "target",
            WindowRole::Input => "input",
            WindowRole::Local => "local",
            WindowRole::SendCounts => "send_counts",
            WindowRole::RecvCounts => "recv_counts",
            WindowRole::Counts => "counts",
            WindowRole::Message => "window",
        }
    }

    /// Whether the collective writes this operand: its target, and the counts all_gather_v
    /// and all_to_all_v fill in (a host tensor in such a place is copied back after the call).
    pub const fn is_written(self) -> bool {
        matches!(self, WindowRole::Target | WindowRole::RecvCounts | WindowRole::Counts)
    }
}

/// One row of the contract table.
#[derive(Debug)]
pub struct Contract {
    /// The collective this row describes.
    pub collective: Collective,
    /// Positional window operands, in call order.
    pub windows: &'static [WindowRole],
    /// Keyword arguments accepted after the positional ones.
    pub keywords: &'static [&'static str],
    /// Keywords that must be given.
    pub required_keywords: &'static [&'static str],
    /// Whether `op = ...` applies (the collective combines values).
    pub reduces: bool,
    /// Whether the signal may be given as an optional last positional argument (`barrier!(s)`)
    /// instead of as `signal = s`.
    pub positional_signal: bool,
    /// Whether the call ends with every peer done reading this rank's windows (a closing barrier
    /// or an equivalent last round), so that back-to-back calls and following kernels are safe.
    pub closes: bool,
}

impl Collective {
    /// Every collective, in table order.
    pub const ALL: [Collective; 13] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
        Collective::AllToAll,
        Collective::AllToAllV,
        Collective::Barrier,
        Collective::Reduce,
        Collective::Gather,
        Collective::Scatter,
        Collective::AllGatherV,
        Collective::Send,
        Collective::Recv,
    ];

    /// The name of the collective's macro and host method (`all_reduce`, `all_to_all_v`).
    pub const fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::AllGather => "all_gather",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::Broadcast => "broadcast",
            Collective::AllToAll => "all_to_all",
            Collective::AllToAllV => "all_to_all_v",
            Collective::Barrier => "barrier",
            Collective::Reduce => "reduce",
            Collective::Gather => "gather",
            Collective::Scatter => "scatter",
            Collective::AllGatherV => "all_gather_v",
            Collective::Send => "send",
            Collective::Recv => "recv",
        }
    }

    /// Whether the call is point-to-point (send, recv): between two ranks, matched in order per
    /// direction, with no signal of its own (the runtime's point-to-point area carries it).
    pub const fn is_point_to_point(self) -> bool {
        matches!(self, Collective::Send | Collective::Recv)
    }

    /// Parses a name produced by [`Collective::name`].
    pub fn from_name(name: &str) -> Option<Collective> {
        Collective::ALL.into_iter().find(|c| c.name() == name)
    }

    /// This collective's row of the contract table.
    pub const fn contract(self) -> &'static Contract {
        &CONTRACTS[self as usize]
    }

    /// The dtype every signal has.
    pub const SIGNAL_DTYPE: DType = DType::I32;

    /// Number of i32 cells in this collective's signal for a world of `nranks`: one credit
    /// counter per peer.
    pub const fn signal_cells(nranks: usize) -> usize {
        nranks
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

use WindowRole::*;

const CONTRACTS: [Contract; 13] = [
    Contract {
        collective: Collective::AllReduce,
        windows: &[Target],
        keywords: &["op", "mode", "nranks", "group", "signal"],
        required_keywords: &[],
        reduces: true,
        positional_signal: false,
        closes: true,
    },
    Contract {
        collective: Collective::AllGather,
        windows: &[Local, Target],
        keywords: &["nranks", "group", "signal"],
        required_keywords: &[],
        reduces: false,
        positional_signal: false,
        closes: true,
    },
    Contract {
        collective: Collective::ReduceScatter,
        windows: &[Target],
        keywords: &["op", "nranks", "group", "signal"],
        required_keywords: &[],
        reduces: true,
        positional_signal: false,
        closes: true,
    },
    Contract {
        collective: Collective::Broadcast,
        windows: &[Target],
        keywords: &["root", "nranks", "group", "signal"],
        required_keywords: &["root"],
        reduces: false,
        positional_signal: false,
        closes: true,
    },
    Contract {
        collective: Collective::AllToAll,
        windows: &[Input, Target],
        keywords: &["nranks", "group", "signal"],
        required_keywords: &[],
        reduces: false,
        positional_signal: false,
        closes: true,
    },
    Contract {
        collective: Collective::AllToAllV,
        windows: &[Input, Target, SendCounts, RecvCounts],
        keywords: &["nranks", "group", "signal"],
        required_keywords: &[],
        reduces: false,
        positional_signal: false,
        closes: true,
    },
    Contract {
        collective: Collective::Barrier,
        windows: &[],
        keywords: &["group"],
        required_keywords: &[],
        reduces: false,
        positional_signal: true,
        closes: true,
    },
    Contract {
        collective: Collective::Reduce,
        windows: &[Target],
        keywords: &["op", "root", "nranks", "group", "signal"],
        required_keywords: &["root"],
        reduces: true,
        positional_signal: false,
        closes: true,
    },
    Contract {
        collective: Collective::Gather,
        windows: &[Local, Target],
        keywords: &["root", "nranks", "group", "signal"],
        required_keywords: &["root"],
        reduces: false,
        positional_signal: false,
        closes: true,
    },
    Contract {
        collective: Collective::Scatter,
        windows: &[Input, Target],
        keywords: &["root", "nranks", "group", "signal"],
        required_keywords: &["root"],
        reduces: false,
        positional_signal: false,
        closes: true,
    },
    Contract {
        collective: Collective::AllGatherV,
        windows: &[Local, Target, Counts],
        keywords: &["nranks", "group", "signal"],
        required_keywords: &[],
        reduces: false,
        positional_signal: false,
        closes: true,
    },
    // `from`/`to` of the side the call runs on is optional: a host that drives one rank (an
    // SPMD or MPI host) sends and receives as that rank.
    Contract {
        collective: Collective::Send,
        windows: &[Message],
        keywords: &["to", "from", "nranks", "group"],
        required_keywords: &["to"],
        reduces: false,
        positional_signal: false,
        closes: true,
    },
    Contract {
        collective: Collective::Recv,
        windows: &[Target],
        keywords: &["from", "to", "nranks", "group"],
        required_keywords: &["from"],
        reduces: false,
        positional_signal: false,
        closes: true,
    },
];

/// The device kernels that implement the collectives.
///
/// Reducing kernels are generated once per (op, dtype); the others only move bytes, so one
/// variant serves every dtype (a copy is bit-exact whatever the bits mean).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelKind {
    /// One-shot all_reduce: every rank reduces every peer's buffer.
    AllReduceMesh,
    /// Two-shot all_reduce (mesh mode, large buffers): each rank reduces one chunk from every
    /// peer and writes it into every peer's buffer. Same reduction order, so the same bits.
    AllReduceTwoShot,
    /// Ring all_reduce: reduce-scatter then all-gather between neighbours.
    AllReduceRing,
    /// Reduce row `rank` over all ranks.
    ReduceScatter,
    /// Copy the root's buffer.
    Broadcast,
    /// Pull each peer's local row.
    AllGather,
    /// Pull row `rank` of each peer's input.
    AllToAll,
    /// Pull the counted rows of each peer's block for this rank.
    AllToAllV,
    /// Credit barrier.
    Barrier,
    /// The root reduces every rank's buffer (in rank order, as all_reduce does).
    Reduce,
    /// The root collects each rank's local row.
    Gather,
    /// Each rank takes its row of the root's input.
    Scatter,
    /// Pull the counted rows of each peer's local block.
    AllGatherV,
    /// A batch of one rank's sends and receives, progressed in any order.
    SendRecv,
}

impl KernelKind {
    /// Every kernel kind.
    pub const ALL: [KernelKind; 14] = [
        KernelKind::AllReduceMesh,
        KernelKind::AllReduceTwoShot,
        KernelKind::AllReduceRing,
        KernelKind::ReduceScatter,
        KernelKind::Broadcast,
        KernelKind::AllGather,
        KernelKind::AllToAll,
        KernelKind::AllToAllV,
        KernelKind::Barrier,
        KernelKind::Reduce,
        KernelKind::Gather,
        KernelKind::Scatter,
        KernelKind::AllGatherV,
        KernelKind::SendRecv,
    ];

    /// Whether variants exist per (op, dtype).
    pub const fn reduces(self) -> bool {
        matches!(
            self,
            KernelKind::AllReduceMesh
                | KernelKind::AllReduceTwoShot
                | KernelKind::AllReduceRing
                | KernelKind::ReduceScatter
                | KernelKind::Reduce
        )
    }

    /// The stem of the kernel's C symbol.
    pub const fn stem(self) -> &'static str {
        match self {
            KernelKind::AllReduceMesh => "all_reduce_mesh",
            KernelKind::AllReduceTwoShot => "all_reduce_two_shot",
            KernelKind::AllReduceRing => "all_reduce_ring",
            KernelKind::ReduceScatter => "reduce_scatter",
            KernelKind::Broadcast => "broadcast",
            KernelKind::AllGather => "all_gather",
            KernelKind::AllToAll => "all_to_all",
            KernelKind::AllToAllV => "all_to_all_v",
            KernelKind::Barrier => "barrier",
            KernelKind::Reduce => "reduce",
            KernelKind::Gather => "gather",
            KernelKind::Scatter => "scatter",
            KernelKind::AllGatherV => "all_gather_v",
            KernelKind::SendRecv => "send_recv",
        }
    }

    /// The collective this kernel implements.
    pub const fn collective(self) -> Collective {
        match self {
            KernelKind::AllReduceMesh | KernelKind::AllReduceTwoShot | KernelKind::AllReduceRing => {
                Collective::AllReduce
            }
            KernelKind::ReduceScatter => Collective::ReduceScatter,
            KernelKind::Broadcast => Collective::Broadcast,
            KernelKind::AllGather => Collective::AllGather,
            KernelKind::AllToAll => Collective::AllToAll,
            KernelKind::AllToAllV => Collective::AllToAllV,
            KernelKind::Barrier => Collective::Barrier,
            KernelKind::Reduce => Collective::Reduce,
            KernelKind::Gather => Collective::Gather,
            KernelKind::Scatter => Collective::Scatter,
            KernelKind::AllGatherV => Collective::AllGatherV,
            KernelKind::SendRecv => Collective::Send,
        }
    }
}

/// One generated builtin kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelVariant {
    /// Which kernel.
    pub kind: KernelKind,
    /// The reduce op and dtype, for reducing kernels only.
    pub reduction: Option<(ReduceOp, DType)>,
}

impl KernelVariant {
    /// The variant of a data-movement kernel.
    pub const fn movement(kind: KernelKind) -> KernelVariant {
        KernelVariant { kind, reduction: None }
    }

    /// The variant of a reducing kernel (`Avg` runs `Sum`'s kernel: [`ReduceOp::kernel_op`]).
    pub const fn reducing(kind: KernelKind, op: ReduceOp, dtype: DType) -> KernelVariant {
        KernelVariant { kind, reduction: Some((op.kernel_op(), dtype)) }
    }

    /// Every builtin variant the backend generates and the runtime expects to find.
    pub fn all() -> impl Iterator<Item = KernelVariant> {
        KernelKind::ALL.into_iter().flat_map(|kind| {
            let reducing: Vec<KernelVariant> = if kind.reduces() {
                ReduceOp::COMBINING
                    .into_iter()
                    .flat_map(|op| DType::ALL.into_iter().map(move |d| Self::reducing(kind, op, d)))
                    .collect()
            } else {
                vec![Self::movement(kind)]
            };
            reducing
        })
    }

    /// A bound on [`KernelVariant::index`].
    pub const INDEX_BOUND: usize = KernelKind::ALL.len() * ReduceOp::COMBINING.len() * DType::ALL.len();

    /// A dense index, distinct per variant and below [`KernelVariant::INDEX_BOUND`]: the runtime
    /// finds a call's kernel in a table, not by a search (a search was a tenth of a small
    /// collective's time).
    pub const fn index(self) -> usize {
        let within = match self.reduction {
            Some((op, dtype)) => op as usize * DType::ALL.len() + dtype as usize,
            None => 0,
        };
        self.kind as usize * ReduceOp::COMBINING.len() * DType::ALL.len() + within
    }

    /// The C symbol: `pld_builtin_all_reduce_ring__max__bf16`, `pld_builtin_barrier`.
    pub fn symbol(&self) -> String {
        match self.reduction {
            Some((op, dtype)) => format!("pld_builtin_{}__{}__{}", self.kind.stem(), op, dtype),
            None => format!("pld_builtin_{}", self.kind.stem()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rows_are_in_collective_order() {
        for c in Collective::ALL {
            assert_eq!(c.contract().collective, c);
            assert_eq!(Collective::from_name(c.name()), Some(c));
            for k in c.contract().required_keywords {
                assert!(c.contract().keywords.contains(k));
            }
        }
    }

    #[test]
    fn variants_cover_every_op_and_dtype_once() {
        let all: Vec<_> = KernelVariant::all().collect();
        assert_eq!(all.len(), 5 * 4 * 12 + 9); // 5 reducing kinds x 4 kernel ops x 12 dtypes, 9 movement kinds
        let mut symbols: Vec<_> = all.iter().map(KernelVariant::symbol).collect();
        symbols.sort();
        symbols.dedup();
        assert_eq!(symbols.len(), all.len());
        assert!(symbols.contains(&"pld_builtin_all_reduce_ring__prod__bf16".to_string()));
        assert!(symbols.contains(&"pld_builtin_reduce__sum__f8e5m2".to_string()));
    }

    #[test]
    fn variant_indices_are_distinct_and_bounded() {
        let mut indices: Vec<_> = KernelVariant::all().map(KernelVariant::index).collect();
        assert!(indices.iter().all(|&i| i < KernelVariant::INDEX_BOUND));
        indices.sort();
        indices.dedup();
        assert_eq!(indices.len(), KernelVariant::all().count());
    }
}
