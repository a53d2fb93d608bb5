//! The group suite, shared by `tests/groups.rs` (local threads) and `tests/mpi_e2e.rs`
//! (`PLD_E2E_MODE=groups`, a rank per process): every collective over every kind of group,
//! three rounds back to back, exact patterns in group terms, non-members' windows unchanged.

use super::{TestElem, value as exact};
use pld::{
    AllReduce, AllReduceMode, Broadcast, DType, Group, GroupSet, Host, Opts, RecvFrom, Reduce, ReduceOp, ReduceScatter,
    Rooted, SendTo, Window,
};

/// What a non-member's window holds throughout (exact in every dtype).
const UNTOUCHED: f32 = 77.0;

/// [`UNTOUCHED`] in `T`.
fn untouched<T: TestElem>() -> T {
    T::from_i64(UNTOUCHED as i64)
}

/// Element `k` of group rank `i`'s input in round `round` (small integers: exact in f32).
fn value(i: usize, k: usize, round: usize) -> f32 {
    ((i + 1) * 100 + k % 97 + round * 7) as f32
}

/// The groups of `set` a world rank is in, with its group rank.
fn place(groups: &[Group], rank: usize) -> Option<(&Group, usize)> {
    groups.iter().find_map(|g| g.rank_of(rank).map(|i| (g, i)))
}

/// Writes each member its group-rank pattern (`len` elements) and each non-member `UNTOUCHED`.
fn stage<T: TestElem>(host: &Host<'_>, w: &Window<'_, T>, groups: &[Group], pattern: impl Fn(usize) -> Vec<T>) {
    for r in host.ranks() {
        let data = match place(groups, r) {
            Some((_, i)) => pattern(i),
            None => vec![untouched::<T>(); w.len()],
        };
        host.write(w, r, &data).unwrap();
    }
}

/// Checks every member against `expected(group, group rank)` and every non-member untouched.
fn check<T: TestElem>(
    host: &Host<'_>,
    w: &Window<'_, T>,
    groups: &[Group],
    what: &str,
    expected: impl Fn(&Group, usize) -> Vec<T>,
) {
    for r in host.ranks() {
        let found = host.read(w, r).unwrap();
        match place(groups, r) {
            Some((g, i)) => assert_eq!(found, expected(g, i), "{what}: world rank {r} (rank {i} of {:?})", g.members()),
            None => assert!(
                found.iter().all(|&v| v == untouched::<T>()),
                "{what}: world rank {r} is in no group but changed"
            ),
        }
    }
}

/// Every collective over `set` (groups of one size), three rounds.
pub fn every_collective(host: &Host<'_>, set: &impl GroupSet, what: &str) {
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
            stage(host, &w, groups, |i| (0..count).map(|k| value(i, k, round)).collect());
            host.all_reduce(&w, AllReduce::mesh().mode(mode).group(set)).unwrap();
            check(host, &w, groups, &format!("{what}: all_reduce {mode:?} x{count}, round {round}"), |grp, _| {
                (0..count).map(|k| (0..grp.size()).map(|i| value(i, k, round)).sum()).collect()
            });
        }
        let row = 5;
        let rs = host.window::<f32>("rs", [g, row]).unwrap();
        stage(host, &rs, groups, |i| (0..g * row).map(|k| value(i, k, round)).collect());
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
        stage(host, &bc, groups, |i| (0..9).map(|k| value(i, k, round)).collect());
        host.broadcast(&bc, Broadcast::root(g as i64 - 1).group(set)).unwrap();
        check(host, &bc, groups, &format!("{what}: broadcast, round {round}"), |_, _| {
            (0..9).map(|k| value(g - 1, k, round)).collect()
        });
        let local = host.window::<f32>("local", [row]).unwrap();
        let gathered = host.window::<f32>("gathered", [g, row]).unwrap();
        stage(host, &local, groups, |i| (0..row).map(|k| value(i, k, round)).collect());
        stage(host, &gathered, groups, |_| vec![0.0; g * row]);
        host.all_gather(&local, &gathered, Opts::new().group(set)).unwrap();
        check(host, &gathered, groups, &format!("{what}: all_gather, round {round}"), |_, _| {
            (0..g * row).map(|k| value(k / row, k % row, round)).collect()
        });
        let input = host.window::<f32>("input", [g, row]).unwrap();
        let target = host.window::<f32>("target", [g, row]).unwrap();
        stage(host, &input, groups, |i| (0..g * row).map(|k| value(i, k, round)).collect());
        stage(host, &target, groups, |_| vec![0.0; g * row]);
        host.all_to_all(&input, &target, Opts::new().group(set)).unwrap();
        // Row p of member i's target is row i of member p's input.
        check(host, &target, groups, &format!("{what}: all_to_all, round {round}"), |_, i| {
            (0..g * row).map(|k| value(k / row, i * row + k % row, round)).collect()
        });
        // all_to_all_v: member i sends member d `(i + d + round) % 3` rows of up to 2, 3 wide.
        let (max_rows, width) = (2, 3);
        let count = |from: usize, to: usize| (from + to + round) % 3;
        let input = host.window::<f32>("v_input", [g * max_rows, width]).unwrap();
        let target = host.window::<f32>("v_target", [g * max_rows, width]).unwrap();
        let send = host.window::<i32>("send", [g]).unwrap();
        let recv = host.window::<i32>("recv", [g]).unwrap();
        let elems = g * max_rows * width;
        stage(host, &input, groups, |i| (0..elems).map(|k| value(i, k, round)).collect());
        stage(host, &target, groups, |_| vec![0.0; elems]);
        for r in host.ranks() {
            let counts: Vec<i32> = match place(groups, r) {
                Some((_, i)) => (0..g).map(|d| count(i, d).min(max_rows) as i32).collect(),
                None => vec![UNTOUCHED as i32; g],
            };
            host.write(&send, r, &counts).unwrap();
            host.write(&recv, r, &vec![if place(groups, r).is_some() { -1 } else { UNTOUCHED as i32 }; g]).unwrap();
        }
        host.all_to_all_v(&input, &target, &send, &recv, Opts::new().group(set)).unwrap();
        check(host, &target, groups, &format!("{what}: all_to_all_v, round {round}"), |_, i| {
            (0..elems)
                .map(|k| {
                    let (p, row) = (k / (max_rows * width), k / width % max_rows);
                    let sent = count(p, i).min(max_rows);
                    // Row `row` of block p came from row `row` of p's block for i, if sent.
                    if row < sent { value(p, (i * max_rows + row) * width + k % width, round) } else { 0.0 }
                })
                .collect()
        });
        for r in host.ranks() {
            let found = host.read(&recv, r).unwrap();
            match place(groups, r) {
                Some((_, i)) => {
                    let expected: Vec<i32> = (0..g).map(|p| count(p, i).min(max_rows) as i32).collect();
                    assert_eq!(found, expected, "{what}: recv_counts of world rank {r}, round {round}");
                }
                None => assert!(found.iter().all(|&c| c == UNTOUCHED as i32), "{what}: rank {r}'s counts changed"),
            }
        }
        rooted(host, set, groups, round, what);
        // all_gather_v: member i sends `(i + round) % 3` rows of up to 2, 3 wide.
        let (max_rows, width) = (2, 3);
        let sent = |i: usize| ((i + round) % 3).min(max_rows);
        let local = host.window::<f32>("gv_local", [max_rows, width]).unwrap();
        let target = host.window::<f32>("gv_target", [g * max_rows, width]).unwrap();
        let counts = host.window::<i32>("gv_counts", [g]).unwrap();
        stage(host, &local, groups, |i| (0..max_rows * width).map(|k| value(i, k, round)).collect());
        stage(host, &target, groups, |_| vec![0.0; g * max_rows * width]);
        for r in host.ranks() {
            let cells: Vec<i32> = match place(groups, r) {
                Some((_, i)) => (0..g).map(|p| if p == i { sent(i) as i32 } else { -1 }).collect(),
                None => vec![UNTOUCHED as i32; g],
            };
            host.write(&counts, r, &cells).unwrap();
        }
        host.all_gather_v(&local, &target, &counts, Opts::new().group(set)).unwrap();
        check(host, &target, groups, &format!("{what}: all_gather_v, round {round}"), |_, _| {
            (0..g * max_rows * width)
                .map(|k| {
                    let (p, row) = (k / (max_rows * width), k / width % max_rows);
                    if row < sent(p) { value(p, k % (max_rows * width), round) } else { 0.0 }
                })
                .collect()
        });
        for r in host.ranks() {
            let found = host.read(&counts, r).unwrap();
            match place(groups, r) {
                Some(_) => assert_eq!(found, (0..g).map(|p| sent(p) as i32).collect::<Vec<_>>(), "{what}: rank {r}"),
                None => assert!(found.iter().all(|&c| c == UNTOUCHED as i32), "{what}: rank {r}'s counts changed"),
            }
        }
        // A ring of sends and receives inside every group, in group ranks, sends first.
        let out = host.window::<f32>("p2p_out", [5]).unwrap();
        let inbox = host.window::<f32>("p2p_inbox", [5]).unwrap();
        stage(host, &out, groups, |i| (0..5).map(|k| value(i, k, round)).collect());
        stage(host, &inbox, groups, |_| vec![UNTOUCHED; 5]);
        for i in 0..g {
            host.send(&out, SendTo::rank(((i + 1) % g) as i64).from(i as i64).group(set)).unwrap();
        }
        for i in 0..g {
            host.recv(&inbox, RecvFrom::rank(((i + g - 1) % g) as i64).to(i as i64).group(set)).unwrap();
        }
        check(host, &inbox, groups, &format!("{what}: send/recv ring, round {round}"), |_, i| {
            (0..5).map(|k| value((i + g - 1) % g, k, round)).collect()
        });
        host.barrier(Opts::new().group(set)).unwrap();
    }
    host.sync().unwrap();
}

/// reduce, gather and scatter over `set`, with roots in group terms that move with the round;
/// the non-roots' targets (and inputs) are checked untouched as well as the non-members'.
fn rooted(host: &Host<'_>, set: &impl GroupSet, groups: &[Group], round: usize, what: &str) {
    let g = groups[0].size();
    for count in [6, 20_000] {
        let root = round % g;
        let w = host.window::<f32>("reduce", [count]).unwrap();
        stage(host, &w, groups, |i| (0..count).map(|k| value(i, k, round)).collect());
        host.reduce(&w, Reduce::root(root as i64).group(set)).unwrap();
        check(host, &w, groups, &format!("{what}: reduce x{count} to {root}, round {round}"), |grp, i| {
            (0..count)
                .map(|k| if i == root { (0..grp.size()).map(|p| value(p, k, round)).sum() } else { value(i, k, round) })
                .collect()
        });
        let root = (g - 1 + round) % g;
        let local = host.window::<f32>("g_local", [count]).unwrap();
        let gathered = host.window::<f32>("g_target", [g, count]).unwrap();
        stage(host, &local, groups, |i| (0..count).map(|k| value(i, k, round)).collect());
        stage(host, &gathered, groups, |_| vec![-1.0; g * count]);
        host.gather(&local, &gathered, Rooted::root(root as i64).group(set)).unwrap();
        check(host, &gathered, groups, &format!("{what}: gather x{count} to {root}, round {round}"), |_, i| {
            if i == root {
                (0..g * count).map(|k| value(k / count, k % count, round)).collect()
            } else {
                vec![-1.0; g * count]
            }
        });
        let root = (g / 2 + round) % g;
        let input = host.window::<f32>("s_input", [g, count]).unwrap();
        let target = host.window::<f32>("s_target", [count]).unwrap();
        // Row p of the root's input is for member p; the others' inputs hold -2 and stay so.
        stage(host, &input, groups, |i| {
            if i == root {
                (0..g * count).map(|k| value(k / count, k % count, round)).collect()
            } else {
                vec![-2.0; g * count]
            }
        });
        stage(host, &target, groups, |_| vec![-1.0; count]);
        host.scatter(&input, &target, Rooted::root(root as i64).group(set)).unwrap();
        check(host, &target, groups, &format!("{what}: scatter x{count} from {root}, round {round}"), |_, i| {
            (0..count).map(|k| value(i, k, round)).collect()
        });
        check(host, &input, groups, &format!("{what}: scatter's input, round {round}"), |_, i| {
            if i == root {
                (0..g * count).map(|k| value(k / count, k % count, round)).collect()
            } else {
                vec![-2.0; g * count]
            }
        });
    }
}

/// Every kind of group on `host`'s world: explicit lists of every size from 1 (non-contiguous),
/// the reversed world, a strided range, a split by parity (each group, and the whole split when
/// its groups have one size), and the axes of a mesh.
pub fn every_kind_of_group(host: &Host<'_>) {
    let n = host.nranks();
    for size in 1..=n {
        let mut members: Vec<usize> = (0..size).map(|i| (i * 3 + 1) % n).collect();
        members.sort_unstable();
        members.dedup();
        let group = host.group(&members).unwrap();
        every_collective(host, &group, &format!("{n} ranks, group {members:?}"));
    }
    let reversed: Vec<usize> = (0..n).rev().collect();
    every_collective(host, &host.group(&reversed).unwrap(), &format!("{n} ranks, reversed"));
    if n >= 3 {
        let strided = host.group_strided(1, 2, (n - 1) / 2).unwrap();
        every_collective(host, &strided, &format!("{n} ranks, strided {:?}", strided.members()));
    }
    let split = host.split(|r| Some(((r % 2) as u32, -(r as i64)))).unwrap();
    for group in split.groups() {
        every_collective(host, group, &format!("{n} ranks, split group {:?}", group.members()));
    }
    if n.is_multiple_of(2) {
        every_collective(host, &split, &format!("{n} ranks, split by parity"));
    }
    let dims: Vec<usize> = match n {
        4 => vec![2, 2],
        6 => vec![2, 3],
        n => vec![n, 1],
    };
    let mesh = host.mesh(&dims).unwrap();
    for axis in 0..dims.len() {
        every_collective(host, mesh.axis(axis).unwrap(), &format!("{n} ranks, mesh {dims:?} axis {axis}"));
    }
}

/// `premul_sum`'s scalar in the typed sweep (an integer: integers take integer scalars only).
const SCALE: f64 = 2.0;

/// Group rank `i`'s input of `n` elements for `op` in `round` (exact under `op` in every dtype).
fn typed_input<T: TestElem>(op: ReduceOp, i: usize, round: usize, n: usize) -> Vec<T> {
    (0..n).map(|k| exact::<T>(op, i, round, k)).collect()
}

/// The `op`-reduction over a group of `g` of [`typed_input`], as the device computes it
/// (`premul_sum`: each input scaled by [`SCALE`] first).
fn typed_reduced<T: TestElem>(op: ReduceOp, g: usize, round: usize, n: usize) -> Vec<T> {
    (0..n)
        .map(|k| {
            let column: Vec<T> = (0..g)
                .map(|i| {
                    let x = exact::<T>(op, i, round, k);
                    if op == ReduceOp::PremulSum { T::premultiply(x, SCALE) } else { x }
                })
                .collect();
            T::reduce_in_rank_order(op, &column).expect("a group is never empty")
        })
        .collect()
}

/// The calls that take an op or carry any dtype (all_reduce in every mode, reduce_scatter and
/// reduce with `op`; gather, scatter, all_gather_v and a send/recv ring moving `T`) over `set`,
/// three rounds, `count` elements (`0` rows are not a case here: `count >= 1`).
fn typed_collectives<T: TestElem>(host: &Host<'_>, set: &impl GroupSet, op: ReduceOp, count: usize, what: &str) {
    let groups = set.group_list();
    let g = groups[0].size();
    let what = format!("{what}, {} {op} x{count}", T::DTYPE);
    for round in 0..3 {
        for mode in AllReduceMode::ALL {
            let w = host.window::<T>("t_data", [count]).unwrap();
            stage(host, &w, groups, |i| typed_input(op, i, round, count));
            let opts = AllReduce::mesh().mode(mode);
            let opts = if op == ReduceOp::PremulSum { opts.premul_sum(SCALE) } else { opts.op(op) };
            host.all_reduce(&w, opts.group(set)).unwrap();
            check(host, &w, groups, &format!("{what}: all_reduce {mode:?}, round {round}"), |grp, _| {
                typed_reduced(op, grp.size(), round, count)
            });
        }
        let rs = host.window::<T>("t_rs", [g, count]).unwrap();
        stage(host, &rs, groups, |i| typed_input(op, i, round, g * count));
        let rs_opts = if op == ReduceOp::PremulSum {
            ReduceScatter::new().premul_sum(SCALE)
        } else {
            ReduceScatter::new().op(op)
        };
        host.reduce_scatter(&rs, rs_opts.group(set)).unwrap();
        check(host, &rs, groups, &format!("{what}: reduce_scatter, round {round}"), |grp, i| {
            let all = typed_reduced::<T>(op, grp.size(), round, g * count);
            let mut own = typed_input::<T>(op, i, round, g * count);
            own[i * count..(i + 1) * count].copy_from_slice(&all[i * count..(i + 1) * count]);
            own
        });
        let root = (round + 1) % g;
        let w = host.window::<T>("t_reduce", [count]).unwrap();
        stage(host, &w, groups, |i| typed_input(op, i, round, count));
        let reduce = Reduce::root(root as i64);
        let reduce = if op == ReduceOp::PremulSum { reduce.premul_sum(SCALE) } else { reduce.op(op) };
        host.reduce(&w, reduce.group(set)).unwrap();
        check(host, &w, groups, &format!("{what}: reduce to {root}, round {round}"), |grp, i| {
            if i == root { typed_reduced(op, grp.size(), round, count) } else { typed_input(op, i, round, count) }
        });
        let filler = |n: usize| vec![T::from_i64(-1); n];
        let local = host.window::<T>("t_local", [count]).unwrap();
        let gathered = host.window::<T>("t_gathered", [g, count]).unwrap();
        stage(host, &local, groups, |i| typed_input(op, i, round, count));
        stage(host, &gathered, groups, |_| filler(g * count));
        host.gather(&local, &gathered, Rooted::root(root as i64).group(set)).unwrap();
        check(host, &gathered, groups, &format!("{what}: gather to {root}, round {round}"), |_, i| {
            if i == root {
                (0..g).flat_map(|p| typed_input::<T>(op, p, round, count)).collect()
            } else {
                filler(g * count)
            }
        });
        let input = host.window::<T>("t_input", [g, count]).unwrap();
        let target = host.window::<T>("t_target", [count]).unwrap();
        let rows = |i: usize| (0..g).flat_map(|p| typed_input::<T>(op, p + i, round, count)).collect::<Vec<_>>();
        stage(host, &input, groups, rows);
        stage(host, &target, groups, |_| filler(count));
        host.scatter(&input, &target, Rooted::root(root as i64).group(set)).unwrap();
        check(host, &target, groups, &format!("{what}: scatter from {root}, round {round}"), |_, i| {
            typed_input(op, i + root, round, count)
        });
        check(host, &input, groups, &format!("{what}: scatter's input, round {round}"), |_, i| rows(i));
        // all_gather_v: member i sends `(i + round) % 3` of up to 2 rows, `count` wide.
        let sent = |i: usize| (i + round) % 3;
        let local = host.window::<T>("t_v_local", [2, count]).unwrap();
        let target = host.window::<T>("t_v_target", [g * 2, count]).unwrap();
        let counts = host.window::<i32>("t_v_counts", [g]).unwrap();
        stage(host, &local, groups, |i| typed_input(op, i, round, 2 * count));
        stage(host, &target, groups, |_| filler(g * 2 * count));
        stage(host, &counts, groups, |i| (0..g).map(|p| if p == i { sent(i) as i32 } else { -1 }).collect());
        host.all_gather_v(&local, &target, &counts, Opts::new().group(set)).unwrap();
        check(host, &target, groups, &format!("{what}: all_gather_v, round {round}"), |_, _| {
            (0..g)
                .flat_map(|p| {
                    let mut block = typed_input::<T>(op, p, round, 2 * count);
                    block[sent(p) * count..].fill(T::from_i64(-1));
                    block
                })
                .collect()
        });
        // A ring of sends and receives in group ranks, every send first.
        let out = host.window::<T>("t_out", [count]).unwrap();
        let inbox = host.window::<T>("t_inbox", [count]).unwrap();
        stage(host, &out, groups, |i| typed_input(op, i, round, count));
        stage(host, &inbox, groups, |_| filler(count));
        for i in 0..g {
            host.send(&out, SendTo::rank(((i + 1) % g) as i64).from(i as i64).group(set)).unwrap();
        }
        for i in 0..g {
            host.recv(&inbox, RecvFrom::rank(((i + g - 1) % g) as i64).to(i as i64).group(set)).unwrap();
        }
        check(host, &inbox, groups, &format!("{what}: send/recv ring, round {round}"), |_, i| {
            typed_input(op, (i + g - 1) % g, round, count)
        });
    }
    // A dropped window's memory comes back once the calls that use it are past.
    host.sync().unwrap();
}

/// Every dtype under every op over `set`, through [`typed_collectives`]: one size per pair,
/// turning through one that fits a message and one that does not.
pub fn every_dtype_and_op(host: &Host<'_>, set: &impl GroupSet, what: &str) {
    let mut j = 0;
    for dtype in DType::ALL {
        for op in ReduceOp::ALL {
            let count = [3, 1500][j % 2];
            with_dtype!(dtype, typed_collectives(host, set, op, count, what));
            j += 1;
        }
    }
    host.sync().unwrap();
}
