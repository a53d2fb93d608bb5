//! User kernels end to end: the publish / consume pattern around every collective at 2 and 4
//! ranks, and the hand-rolled all_reduce against all_reduce! at 2, 3 and 4 ranks.

use pld::{Tensor, World};
use pld_demo::{hand_rolled, publish_consume};

const N: usize = 6;

fn inputs(nranks: usize, width: usize) -> Tensor<f32> {
    Tensor::from_fn([nranks, width], |[r, i]| (100 * r + i) as f32)
}

#[test]
fn publish_all_reduce_consume() {
    for nranks in [2, 4] {
        let world = World::local(nranks).unwrap();
        let program = publish_consume::load(&world).unwrap();
        let input = inputs(nranks, N);
        let expected: Vec<f32> = (0..N).map(|i| (0..nranks).map(|r| input.row(r)[i]).sum()).collect();
        for ring in [false, true] {
            let mut out = Tensor::zeros([nranks, N]);
            program.all_reduce(&input, &mut out, ring).unwrap();
            for r in 0..nranks {
                assert_eq!(out.row(r), expected, "{nranks} ranks, ring {ring}, rank {r}");
            }
        }
    }
}

#[test]
fn publish_broadcast_consume() {
    for nranks in [2, 4] {
        let world = World::local(nranks).unwrap();
        let input = inputs(nranks, N);
        let mut out = Tensor::zeros([nranks, N]);
        publish_consume::load(&world).unwrap().broadcast(&input, &mut out, nranks - 1).unwrap();
        for r in 0..nranks {
            assert_eq!(out.row(r), input.row(nranks - 1), "{nranks} ranks, rank {r}");
        }
    }
}

#[test]
fn publish_all_gather_consume() {
    for nranks in [2, 4] {
        let world = World::local(nranks).unwrap();
        let input = inputs(nranks, N);
        let mut out = Tensor::zeros([nranks, nranks * N]);
        publish_consume::load(&world).unwrap().all_gather(&input, &mut out).unwrap();
        for r in 0..nranks {
            assert_eq!(out.row(r), input.as_slice(), "{nranks} ranks, rank {r}");
        }
    }
}

#[test]
fn publish_reduce_scatter_consume() {
    for nranks in [2, 4] {
        let world = World::local(nranks).unwrap();
        let input = inputs(nranks, nranks * N);
        let mut out = Tensor::zeros([nranks, nranks * N]);
        publish_consume::load(&world).unwrap().reduce_scatter(&input, &mut out).unwrap();
        for r in 0..nranks {
            let mine = &out.row(r)[r * N..(r + 1) * N];
            assert_eq!(mine, &input.row(nranks - 1)[r * N..(r + 1) * N], "max: the last rank's row");
        }
    }
}

#[test]
fn publish_all_to_all_consume() {
    for nranks in [2, 4] {
        let world = World::local(nranks).unwrap();
        let input = inputs(nranks, nranks * N);
        let mut out = Tensor::zeros([nranks, nranks * N]);
        publish_consume::load(&world).unwrap().all_to_all(&input, &mut out).unwrap();
        for r in 0..nranks {
            for p in 0..nranks {
                assert_eq!(&out.row(r)[p * N..(p + 1) * N], &input.row(p)[r * N..(r + 1) * N]);
            }
        }
    }
}

#[test]
fn publish_all_to_all_v_consume() {
    let (max_rows, row) = (2, 3);
    for nranks in [2, 4] {
        let world = World::local(nranks).unwrap();
        let width = nranks * max_rows * row;
        let input = inputs(nranks, width);
        let counts = Tensor::from_fn([nranks, nranks], |[r, d]| ((r + d) % (max_rows + 1)) as i32);
        let mut out = Tensor::from_fn([nranks, width], |_| -1.0f32);
        let mut received = Tensor::zeros([nranks, nranks]);
        publish_consume::load(&world)
            .unwrap()
            .all_to_all_v(&input, &counts, &mut out, &mut received, max_rows)
            .unwrap();
        let block = max_rows * row;
        for r in 0..nranks {
            for p in 0..nranks {
                let c = counts.row(p)[r] as usize;
                assert_eq!(received.row(r)[p] as usize, c);
                let got = &out.row(r)[p * block..(p + 1) * block];
                assert_eq!(&got[..c * row], &input.row(p)[r * block..r * block + c * row]);
                assert!(got[c * row..].iter().all(|&x| x == -1.0), "rows past the count moved");
            }
        }
    }
}

#[test]
fn publish_barrier_consume() {
    for nranks in [2, 4] {
        let world = World::local(nranks).unwrap();
        let input = inputs(nranks, N);
        let mut out = Tensor::zeros([nranks, N]);
        let mut cells = Tensor::from_fn([nranks, nranks], |_| 7i32);
        publish_consume::load(&world).unwrap().barrier(&input, &mut out, &mut cells).unwrap();
        assert_eq!(out, input);
        assert!(cells.as_slice().iter().all(|&c| c == 0), "{cells:?}");
    }
}

#[test]
fn hand_rolled_all_reduce_equals_the_builtin() {
    for nranks in [2, 3, 4] {
        let world = World::local(nranks).unwrap();
        let program = hand_rolled::load(&world).unwrap();
        // Inexact floats: equality holds because both reduce in rank order.
        let rounds: Vec<Tensor<f32>> = (0..3)
            .map(|k| Tensor::from_fn([nranks, 1000], |[r, i]| ((k * 31 + r * 7 + i) as f32) * 0.37 + 0.1))
            .collect();
        let (by_hand, cells) = program.by_hand(&rounds).unwrap();
        let builtin = program.builtin(&rounds).unwrap();
        assert_eq!(by_hand, builtin, "{nranks} ranks");
        assert!(cells.iter().all(|&c| c == 0), "the hand-rolled protocol leaves its signal clear: {cells:?}");
        let direct: Vec<f32> =
            (0..1000).map(|i| (1..nranks).fold(rounds[0].row(0)[i], |acc, r| acc + rounds[0].row(r)[i])).collect();
        assert_eq!(by_hand[0][0], direct);
    }
}
