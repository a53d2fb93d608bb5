//! Collectives over groups of ranks, end to end: every collective over explicit lists
//! (non-contiguous, reordered, of one rank), splits by colour and key, strided ranges and mesh
//! axes, at 4, 6 and 7 ranks, three rounds back to back on one world, with exact patterns in
//! group terms; every non-member's window must keep its bytes (the suite is in
//! `tests/common/groups.rs`; `tests/mpi_e2e.rs` runs it under mpirun). Also: the checks on
//! making groups, and overlapping groups one after another.

mod common;

use common::groups::{every_dtype_and_op, every_kind_of_group};
use pld::{AllReduce, Broadcast, Group, Groups, Opts, World};

#[test]
fn every_collective_over_every_kind_of_group_at_4_6_and_7_ranks() {
    for n in [4, 6, 7] {
        let world = World::builder(n).window_bytes(256 << 20).local().unwrap();
        every_kind_of_group(&world.host().unwrap());
    }
}

/// Every dtype under every op through the calls that take them, over groups of 1 to 8 members
/// (reordered, non-contiguous, split in two, the whole world reversed) of 5- and 8-rank worlds.
/// A host per group: its windows are freed with it.
#[test]
fn every_dtype_and_op_over_groups_of_1_to_8() {
    let world = World::builder(8).window_bytes(64 << 20).local().unwrap();
    for members in [vec![5], vec![6, 1, 3], (0..8).rev().collect()] {
        let host = world.host().unwrap();
        every_dtype_and_op(&host, &host.group(&members).unwrap(), &format!("8 ranks, group {members:?}"));
    }
    let host = world.host().unwrap();
    let parity = host.split(|r| Some(((r % 2) as u32, r as i64))).unwrap();
    every_dtype_and_op(&host, &parity, "8 ranks, split by parity");
    let world = World::builder(5).window_bytes(64 << 20).local().unwrap();
    for members in [vec![4, 0], vec![0, 2, 3, 4, 1]] {
        let host = world.host().unwrap();
        every_dtype_and_op(&host, &host.group(&members).unwrap(), &format!("5 ranks, group {members:?}"));
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

/// Kernels for the independence test, written against the device ABI and compiled here.
fn hold_and_release() -> (std::sync::Arc<pld::DeviceBinary>, std::path::PathBuf) {
    const SOURCE: &str = r#"
/* args: [cells offset]: waits until this rank's cell is 1, then clears it. */
int32_t hold(pld_ctx *c, const void *args) {
    const uint64_t off = ((const uint64_t *)args)[0] + 4 * (uint64_t)c->rank;
    PLD_TRY(pld_wait(c, off, 1, PLD_WAIT_GE));
    return pld_notify(c, c->rank, off, 0, PLD_NOTIFY_SET);
}

/* args: [cells offset, peer]: sets the peer's cell to 1. */
int32_t release(pld_ctx *c, const void *args) {
    const uint64_t *a = (const uint64_t *)args;
    return pld_notify(c, (int32_t)a[1], a[0] + 4 * a[1], 1, PLD_NOTIFY_SET);
}
"#;
    let dir = std::env::temp_dir().join(format!("pld-group-kernels-{}", std::process::id()));
    let source = pld_backend::DeviceSource::new(SOURCE.into());
    let artifact = pld_backend::DeviceCompiler::new().opt_level(1).compile(&source, &dir, "hold").unwrap();
    // SAFETY: built just above by pld-backend.
    let binary = unsafe { pld::DeviceBinary::open(&artifact.path, Some(source.hash())) }.unwrap();
    (std::sync::Arc::new(binary), dir)
}

/// A call over {0, 1, 2} completes while rank 3 is held in a kernel of its own: disjoint work
/// never waits on each other (rank 0 releases rank 3 only after its group's result is read).
#[test]
fn a_group_call_completes_while_a_rank_outside_is_held_in_a_kernel() {
    let (binary, dir) = hold_and_release();
    let hold = pld::Kernel::new(&binary, "hold").unwrap();
    let release = pld::Kernel::new(&binary, "release").unwrap();
    let world = World::builder(4).timeout(std::time::Duration::from_secs(20)).local().unwrap();
    let results = world
        .spmd(|host| {
            let r = host.rank().expect("a rank");
            let group = host.group(&[0, 1, 2])?;
            let cells = host.window::<i32>("cells", [4])?;
            let data = host.window::<f32>("data", [64])?;
            if r == 3 {
                // SAFETY: `hold` takes [cells offset]; the window is live until the sync.
                unsafe { host.launch(&hold, 3, &[cells.offset() as u64]) }?;
                host.sync()?;
                return Ok(None);
            }
            host.write(&data, r, &[r as f32 + 1.0; 64])?;
            host.all_reduce(&data, AllReduce::mesh().group(&group))?;
            let out = host.read(&data, r)?; // done while rank 3 still waits
            if r == 0 {
                // SAFETY: `release` takes [cells offset, peer].
                unsafe { host.launch(&release, 0, &[cells.offset() as u64, 3]) }?;
            }
            host.sync()?;
            Ok(Some(out))
        })
        .unwrap();
    for (r, result) in results.into_iter().enumerate() {
        match result.unwrap() {
            Some(out) => assert_eq!(out, vec![6.0; 64], "rank {r}"),
            None => assert_eq!(r, 3),
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Members that disagree within a group: an error on every member naming the group and the
/// world ranks of both sides.
#[test]
fn a_mismatch_within_a_group_names_the_group_and_both_sides() {
    let world = World::builder(4).timeout(std::time::Duration::from_secs(20)).local().unwrap();
    let results = world
        .spmd(|host| {
            let group = host.group(&[1, 2, 3])?;
            let data = host.window::<f32>("data", [256])?;
            let r = host.rank().expect("a rank");
            if r != 0 {
                let op = if r == 3 { pld::ReduceOp::Max } else { pld::ReduceOp::Sum };
                host.all_reduce(&data, AllReduce::mesh().op(op).group(&group))?;
            }
            host.sync()
        })
        .unwrap();
    for (r, result) in results.iter().enumerate().skip(1) {
        let err = result.as_ref().unwrap_err();
        let message = err.to_string();
        assert!(message.contains("over group [1, 2, 3]"), "rank {r}: {message}");
        assert!(message.contains("op = max") && message.contains("op = sum"), "rank {r}: {message}");
    }
}

/// A member that never calls: the others time out naming the group and that member's world rank.
#[test]
fn a_hang_within_a_group_names_the_group_and_the_member_missing() {
    let world = World::builder(4).timeout(std::time::Duration::from_millis(400)).local().unwrap();
    let results = world
        .spmd(|host| {
            let group = host.group(&[0, 2, 3])?;
            let data = host.window::<f32>("data", [2000])?;
            if host.rank() != Some(2) && host.rank() != Some(1) {
                host.all_reduce(&data, AllReduce::mesh().group(&group))?;
            }
            host.sync()
        })
        .unwrap();
    for r in [0, 3] {
        let err = results[r].as_ref().unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, pld::Error::Timeout { missing, .. } if missing.contains(&2)), "rank {r}: {message}");
        assert!(message.contains("over group [0, 2, 3]"), "rank {r}: {message}");
    }
}
