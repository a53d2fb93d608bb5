//! Groups of ranks: collectives over part of the world. A [`Group`] is an ordered set of world
//! ranks with ranks of its own (`0..size`); [`Groups`] is a partition of ranks into disjoint
//! groups (a split by colour and key, or an axis of a [`Mesh`]), over which a collective runs in
//! every group at once. Made by a host ([`Host::group`], [`Host::group_strided`],
//! [`Host::split`], [`Host::mesh`]); like `MPI_Comm_split`, making one is collective over the
//! world: under `World::spmd` and MPI every rank's host makes the same groups in the same order
//! (the processes agree on each, within the deadline).

use std::sync::Arc;

use pld_model::LlLayout;

use crate::comm::Comm;
use crate::device::abi::FingerprintWords;
use crate::error::{Error, Result};
use crate::host::Host;
use crate::memory::{Allocation, LlArea};

/// An ordered set of world ranks that run collectives together, with ranks of their own:
/// member `i` is group rank `i`. Roots, counts and `nranks` of a collective over a group are in
/// group terms; ranks outside it are untouched. Pass it with `.group(&g)`.
#[derive(Clone)]
pub struct Group {
    pub(crate) comm: Arc<Comm>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Group{:?}", self.members())
    }
}

impl Group {
    /// Number of members.
    pub fn size(&self) -> usize {
        self.comm.size()
    }

    /// The world ranks of the members, in group-rank order.
    pub fn members(&self) -> &[usize] {
        &self.comm.members
    }

    /// The group rank of world rank `rank`, if it is a member.
    pub fn rank_of(&self, rank: usize) -> Option<usize> {
        self.comm.member(rank)
    }

    /// World rank of group rank `rank`.
    pub fn world_rank(&self, rank: usize) -> Option<usize> {
        self.members().get(rank).copied()
    }
}

/// Disjoint groups that run a collective together, each in its own group: a split's groups,
/// or one axis of a [`Mesh`]. Ranks in none of them are untouched.
#[derive(Clone, Debug)]
pub struct Groups {
    groups: Vec<Group>,
}

impl Groups {
    /// The groups, in order (by colour for a split).
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// The group world rank `rank` is in, if any.
    pub fn group_of(&self, rank: usize) -> Option<&Group> {
        self.groups.iter().find(|g| g.rank_of(rank).is_some())
    }
}

/// A mesh of N dimensions over the world's ranks (row-major, as torch's `DeviceMesh`): axis `i`
/// gives each rank the group of the ranks that differ from it in coordinate `i` only.
#[derive(Clone, Debug)]
pub struct Mesh {
    dims: Vec<usize>,
    axes: Vec<Groups>,
}

impl Mesh {
    /// The mesh's dimensions.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The groups along axis `axis` (every rank is in one of them).
    pub fn axis(&self, axis: usize) -> Option<&Groups> {
        self.axes.get(axis)
    }

    /// The coordinates of world rank `rank`.
    pub fn coords(&self, rank: usize) -> Vec<usize> {
        let mut rest = rank;
        let mut coords = vec![0; self.dims.len()];
        for (i, &d) in self.dims.iter().enumerate().rev() {
            coords[i] = rest % d;
            rest /= d;
        }
        coords
    }
}

/// What a collective runs over: one group or a partition into groups.
pub trait GroupSet: sealed::Sealed {
    /// The groups.
    #[doc(hidden)]
    fn group_list(&self) -> &[Group];
}

impl GroupSet for Group {
    fn group_list(&self) -> &[Group] {
        std::slice::from_ref(self)
    }
}

impl GroupSet for Groups {
    fn group_list(&self) -> &[Group] {
        &self.groups
    }
}

impl<T: GroupSet + ?Sized> GroupSet for &T {
    fn group_list(&self) -> &[Group] {
        (**self).group_list()
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Group {}
    impl Sealed for super::Groups {}
    impl<T: Sealed + ?Sized> Sealed for &T {}
}

impl Host<'_> {
    /// A group of `members`: world ranks, in group-rank order (member `i` is group rank `i`).
    /// No rank twice, every rank in the world, at least one. Collective over the world (see
    /// the module docs).
    pub fn group(&self, members: &[usize]) -> Result<Group> {
        let parts = self.make_groups("Host::group", vec![members.to_vec()])?;
        Ok(parts.groups.into_iter().next().expect("one group"))
    }

    /// The group `start, start + stride, ...` of `size` ranks (NVSHMEM's `team_split_strided`).
    pub fn group_strided(&self, start: usize, stride: usize, size: usize) -> Result<Group> {
        let members: Vec<usize> = (0..size).map(|i| start.saturating_add(i.saturating_mul(stride))).collect();
        if stride == 0 && size > 1 {
            return Err(invalid("Host::group_strided", format!("stride 0 for {size} ranks"), "a stride of 1 or more"));
        }
        self.group(&members)
    }

    /// Splits the world by colour and key, as `MPI_Comm_split`: `colour_key(rank)` gives each
    /// rank's colour and key (`None`: the rank is in no group); ranks of one colour form a
    /// group, ordered by key, then by world rank. The groups come in colour order.
    pub fn split(&self, colour_key: impl Fn(usize) -> Option<(u32, i64)>) -> Result<Groups> {
        let mut keyed: Vec<(u32, i64, usize)> =
            (0..self.nranks()).filter_map(|r| colour_key(r).map(|(c, k)| (c, k, r))).collect();
        keyed.sort_unstable();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut last = None;
        for (colour, _, rank) in keyed {
            if last != Some(colour) {
                groups.push(Vec::new());
                last = Some(colour);
            }
            groups.last_mut().expect("a group").push(rank);
        }
        if groups.is_empty() {
            return Err(invalid("Host::split", "every rank has no colour".into(), "at least one rank with a colour"));
        }
        self.make_groups("Host::split", groups)
    }

    /// A mesh of `dims` over the world (their product must be the rank count), row-major:
    /// rank `r` has coordinates `(r / (d1*d2..)) % d0, ...`, and [`Mesh::axis`]`(i)` groups the
    /// ranks that differ in coordinate `i` only.
    pub fn mesh(&self, dims: &[usize]) -> Result<Mesh> {
        let n = self.nranks();
        let product = dims.iter().try_fold(1usize, |p, &d| p.checked_mul(d));
        if dims.is_empty() || dims.contains(&0) || product != Some(n) {
            return Err(invalid(
                "Host::mesh",
                format!("{dims:?}"),
                &format!("dimensions of 1 or more whose product is the world's {n} ranks"),
            ));
        }
        let mut axes = Vec::with_capacity(dims.len());
        for axis in 0..dims.len() {
            // The stride of coordinate `axis` in a rank number, and the groups along it.
            let stride: usize = dims[axis + 1..].iter().product();
            let groups: Vec<Vec<usize>> = (0..n)
                .filter(|r| (r / stride).is_multiple_of(dims[axis]))
                .map(|first| (0..dims[axis]).map(|c| first + c * stride).collect())
                .collect();
            axes.push(self.make_groups("Host::mesh", groups)?);
        }
        Ok(Mesh { dims: dims.to_vec(), axes })
    }

    /// Checks disjoint groups and makes their communicators, which share one call board and
    /// one LL area (a rank is in at most one of them, so its window's part of each is its
    /// group's alone).
    fn make_groups(&self, what: &str, groups: Vec<Vec<usize>>) -> Result<Groups> {
        let n = self.nranks();
        let mut seen = vec![false; n];
        for members in &groups {
            if members.is_empty() {
                return Err(invalid(what, "an empty group".into(), "at least one rank"));
            }
            for &rank in members {
                if rank >= n {
                    return Err(invalid(what, format!("{members:?}"), &format!("world ranks 0..{n}")));
                }
                if std::mem::replace(&mut seen[rank], true) {
                    return Err(invalid(what, format!("{members:?}"), &format!("each rank once (rank {rank} twice)")));
                }
            }
        }
        let size = groups.iter().map(Vec::len).max().unwrap_or(1);
        let shared = self.world().shared();
        // Named by the membership, so processes that disagree on it fail the agreement.
        let label = format!("group areas of {groups:?}");
        let board =
            self.allocate(&format!("{label}: call board"), 2 * size * std::mem::size_of::<FingerprintWords>())?;
        // Every process allocates the same areas, so the layout must not depend on its node: a
        // world across nodes (whose nodes may be crowded or not) keeps the base depth.
        let n = shared.nranks;
        let crowded = shared.tuning.crowded && shared.fabric.addressable(0..n);
        let addressable = groups.iter().all(|members| shared.fabric.addressable(members.iter().copied()));
        let layout_for =
            |crowded| shared.settings.ll_layout(size, shared.heap().capacity(), crowded).filter(|_| addressable);
        let small_messages = format!("{label}: small-message area");
        let allocate_ll = |layout: LlLayout| -> Result<(LlArea, Vec<Arc<Allocation>>)> {
            let area = self.allocate(&small_messages, usize::try_from(layout.bytes()).unwrap_or(usize::MAX))?;
            Ok((LlArea { offset: area.offset(), layout: Some(layout) }, vec![area]))
        };
        let (ll, mut areas) = match (layout_for(crowded), layout_for(false)) {
            // A window without room for the deeper slots gives the group the base depth, as it
            // had before they existed (an allocation fails alike on every process, so every
            // process takes the same layout).
            (Some(deep), Some(base)) if deep.slots > base.slots => match allocate_ll(deep) {
                Ok(found) => found,
                Err(_) => allocate_ll(base)?,
            },
            (Some(layout), _) => allocate_ll(layout)?,
            (None, _) => (LlArea::default(), Vec::new()),
        };
        areas.push(Arc::clone(&board));
        let parts = shared.fabric.comm_parts();
        let groups = groups
            .into_iter()
            .map(|members| {
                let comm = Arc::new(Comm::new(members, &parts, board.offset(), ll, areas.clone()));
                shared.register(&comm);
                Group { comm }
            })
            .collect();
        Ok(Groups { groups })
    }
}

fn invalid(setting: &str, value: String, expected: &str) -> Error {
    Error::InvalidSetting { setting: setting.to_owned(), value, expected: expected.to_owned() }
}
