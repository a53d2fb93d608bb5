//! Collectives over groups of ranks, end to end: every collective over explicit lists
//! (non-contiguous, reordered, of one rank), splits by colour and key, strided ranges and mesh
//! axes, at 4, 6 and 7 ranks, three rounds back to back on one world, with exact patterns in
//! group terms; every non-member's window must keep its bytes.

use pld::{AllReduce, AllReduceMode, Broadcast, Group, GroupSet, Groups, Host, Opts, ReduceScatter, Window, World};

/// What a non-member's window holds throughout.
const UNTOUCHED: f32 = 777.0;

/// Element `k` of group rank `i`'s input in round `round` (small integers: exact in f32).
fn value(i: usize, k: usize, round: usize) -> f32 {
    ((i + 1) * 100 + k % 97 + round * 7) as f32
}

/// The groups of `set` a world rank is in, with its group rank.
fn place(groups: &[Group], rank: usize) -> Option<(&Group, usize)> {
    groups.iter().find_map(|g| g.rank_of(rank).map(|i| (g, i)))
}

/// Writes each member its group-rank pattern (`len` elements) and each non-member `UNTOUCHED`.
fn stage(host: &Host<'_>, w: &Window<'_, f32>, groups: &[Group], round: usize, pattern: impl Fn(usize) -> Vec<f32>) {
    for r in host.ranks() {
        let data = match place(groups, r) {
            Some((_, i)) => pattern(i),
            None => vec![UNTOUCHED; w.len()],
        };
        let _ = round;
        host.write(w, r, &data).unwrap();
    }
}

/// Checks every member against `expected(group, group rank)` and every non-member untouched.
fn check(
    host: &Host<'_>,
    w: &Window<'_, f32>,
    groups: &[Group],
    what: &str,
    expected: impl Fn(&Group, usize) -> Vec<f32>,
) {
    for r in host.ranks() {
        let found = host.read(w, r).unwrap();
        match place(groups, r) {
            Some((g, i)) => assert_eq!(found, expected(g, i), "{what}: world rank {r} (rank {i} of {:?})", g.members()),
            None => assert!(found.iter().all(|&v| v == UNTOUCHED), "{what}: world rank {r} is in no group but changed"),
        }
    }
}

/// Every collective over `set` (groups of one size), three rounds.
fn every_collective(host: &Host<'_>, set: &impl GroupSet, what: &str) {
    let groups = set.group_list();
    let g = groups[0].size();
    for round in 0..3 {
        for (count, mode) in [
            (4, AllReduceMode::Mesh),
            (3000, AllReduceMode::Mesh),
            (40_000, AllReduceMode::Mesh),
            (33, AllReduceMode::Ring),
        ] {
            let w = host.window::<f32>("data", [count]).unwrap();
            stage(host, &w, groups, round, |i| (0..count).map(|k| value(i, k, round)).collect());
            host.all_reduce(&w, AllReduce::mesh().mode(mode).group(set)).unwrap();
            check(host, &w, groups, &format!("{what}: all_reduce {mode:?} x{count}, round {round}"), |grp, _| {
                (0..count).map(|k| (0..grp.size()).map(|i| value(i, k, round)).sum()).collect()
            });
        }
        let row = 5;
        let rs = host.window::<f32>("rs", [g, row]).unwrap();
        stage(host, &rs, groups, round, |i| (0..g * row).map(|k| value(i, k, round)).collect());
        host.reduce_scatter(&rs, ReduceScatter::new().group(set)).unwrap();
        check(host, &rs, groups, &format!("{what}: reduce_scatter, round {round}"), |grp, i| {
            (0..g * row)
                .map(
                    |k| {
                        if k / row == i {
                            (0..grp.size()).map(|p| value(p, k, round)).sum()
                        } else {
                            value(i, k, round)
                        }
                    },
                )
                .collect()
        });
        let bc = host.window::<f32>("bc", [9]).unwrap();
        stage(host, &bc, groups, round, |i| (0..9).map(|k| value(i, k, round)).collect());
        host.broadcast(&bc, Broadcast::root(g as i64 - 1).group(set)).unwrap();
        check(host, &bc, groups, &format!("{what}: broadcast, round {round}"), |_, _| {
            (0..9).map(|k| value(g - 1, k, round)).collect()
        });
        let local = host.window::<f32>("local", [row]).unwrap();
        let gathered = host.window::<f32>("gathered", [g, row]).unwrap();
        stage(host, &local, groups, round, |i| (0..row).map(|k| value(i, k, round)).collect());
        stage(host, &gathered, groups, round, |_| vec![0.0; g * row]);
        host.all_gather(&local, &gathered, Opts::new().group(set)).unwrap();
        check(host, &gathered, groups, &format!("{what}: all_gather, round {round}"), |_, _| {
            (0..g * row).map(|k| value(k / row, k % row, round)).collect()
        });
        let input = host.window::<f32>("input", [g, row]).unwrap();
        let target = host.window::<f32>("target", [g, row]).unwrap();
        stage(host, &input, groups, round, |i| (0..g * row).map(|k| value(i, k, round)).collect());
        stage(host, &target, groups, round, |_| vec![0.0; g * row]);
        host.all_to_all(&input, &target, Opts::new().group(set)).unwrap();
        // Row p of member i's target is row i of member p's input.
        check(host, &target, groups, &format!("{what}: all_to_all, round {round}"), |_, i| {
            (0..g * row).map(|k| value(k / row, i * row + k % row, round)).collect()
        });
        host.barrier(Opts::new().group(set)).unwrap();
    }
    host.sync().unwrap();
}

#[test]
fn every_collective_over_every_kind_of_group_at_4_6_and_7_ranks() {
    for n in [4, 6, 7] {
        let world = World::builder(n).window_bytes(256 << 20).local().unwrap();
        let host = world.host().unwrap();
        // Explicit lists: every size from 1, non-contiguous, reordered.
        for size in 1..=n {
            let members: Vec<usize> = (0..size).map(|i| (i * 3 + 1) % n).collect();
            let mut unique = members.clone();
            unique.sort_unstable();
            unique.dedup();
            let group = host.group(&unique).unwrap();
            every_collective(&host, &group, &format!("{n} ranks, group {unique:?}"));
        }
        let reversed: Vec<usize> = (0..n).rev().collect();
        every_collective(&host, &host.group(&reversed).unwrap(), &format!("{n} ranks, reversed"));
        // Strided: every other rank from 1.
        let strided = host.group_strided(1, 2, (n - 1) / 2).unwrap();
        every_collective(&host, &strided, &format!("{n} ranks, strided {:?}", strided.members()));
        // A split by colour (rank % 2) with keys reversing the order: each group alone, and the
        // whole split at once where its groups have one size.
        let split = host.split(|r| Some(((r % 2) as u32, -(r as i64)))).unwrap();
        for group in split.groups() {
            every_collective(&host, group, &format!("{n} ranks, split group {:?}", group.members()));
        }
        if n % 2 == 0 {
            every_collective(&host, &split, &format!("{n} ranks, split by parity"));
        }
        // Mesh axes (rows, then columns).
        let dims: &[usize] = match n {
            4 => &[2, 2],
            6 => &[2, 3],
            _ => &[7, 1],
        };
        let mesh = host.mesh(dims).unwrap();
        for axis in 0..dims.len() {
            every_collective(&host, mesh.axis(axis).unwrap(), &format!("{n} ranks, mesh {dims:?} axis {axis}"));
        }
    }
}

#[test]
fn groups_are_checked() {
    let world = World::local(4).unwrap();
    let host = world.host().unwrap();
    for bad in [&[0, 1, 1][..], &[0, 4], &[]] {
        let err = host.group(bad).unwrap_err();
        assert!(matches!(err, pld::Error::InvalidSetting { .. }), "{bad:?}: {err}");
    }
    assert!(host.mesh(&[3, 2]).is_err(), "3 x 2 is not 4 ranks");
    let split = host.split(|r| Some(((r % 3) as u32, 0))).unwrap();
    let sizes: Vec<usize> = split.groups().iter().map(Group::size).collect();
    assert_eq!(sizes, [2, 1, 1]);
    let data = host.window::<f32>("data", [4]).unwrap();
    // Groups of different sizes cannot share a shape-dependent call.
    let err = host.all_gather(&data, &data, Opts::new().group(&split)).unwrap_err();
    assert!(err.to_string().contains("groups of one size"), "{err}");
    // nranks and root are in group terms.
    let pair = host.group(&[1, 3]).unwrap();
    let err = host.broadcast(&data, Broadcast::root(2).group(&pair)).unwrap_err();
    assert!(matches!(err, pld::Error::RootOutOfRange { root: 2, nranks: 2, .. }), "{err}");
    let err = host.all_reduce(&data, AllReduce::ring().nranks(4).group(&pair)).unwrap_err();
    assert!(matches!(err, pld::Error::NranksMismatch { declared: 4, world: 2, .. }), "{err}");
    host.all_reduce(&data, AllReduce::ring().nranks(2).group(&pair)).unwrap();
    host.sync().unwrap();
}

/// Overlapping groups one after another (rows, then columns of a 2 x 2 mesh) equal one
/// all_reduce over the world, bit for bit.
#[test]
fn rows_then_columns_equal_the_world() {
    let world = World::local(4).unwrap();
    let host = world.host().unwrap();
    let mesh = host.mesh(&[2, 2]).unwrap();
    let (a, b) = (host.window::<f32>("a", [1000]).unwrap(), host.window::<f32>("b", [1000]).unwrap());
    for r in 0..4 {
        let data: Vec<f32> = (0..1000).map(|k| ((r * 1000 + k) as f32).sin()).collect();
        host.write(&a, r, &data).unwrap();
        host.write(&b, r, &data).unwrap();
    }
    host.all_reduce(&a, AllReduce::mesh().group(mesh.axis(1).unwrap())).unwrap();
    host.all_reduce(&a, AllReduce::mesh().group(mesh.axis(0).unwrap())).unwrap();
    host.all_reduce(&b, AllReduce::mesh()).unwrap();
    let world_sum = host.read(&b, 0).unwrap();
    for r in 0..4 {
        let mesh_sum = host.read(&a, r).unwrap();
        // Not bit for bit in general (another order of additions): within rounding.
        for (x, y) in mesh_sum.iter().zip(&world_sum) {
            assert!((x - y).abs() <= 1e-5 * y.abs().max(1.0), "rank {r}: {x} vs {y}");
        }
    }
    let _: Option<&Groups> = mesh.axis(2);
}
