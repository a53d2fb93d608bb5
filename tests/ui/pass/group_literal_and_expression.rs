// `group = [..]` (a literal list, made once per call site) and `group = g` (a pld::Group).
#[pld::program]
mod demo {
    #[pld::host]
    pub fn run(pair: &pld::Group) -> (Vec<f32>, Vec<f32>) {
        let data = window!(f32, [4]);
        let other = window!(f32, [4]);
        for r in ranks() {
            stage_in!(data, r, vec![r as f32; 4]);
            stage_in!(other, r, vec![r as f32; 4]);
        }
        for _ in 0..3 {
            all_reduce!(data, op = max, group = [0, 2]);
        }
        broadcast!(other, root = 1, group = pair);
        barrier!(group = pair);
        let (mut a, mut b) = (vec![0.0; 4], vec![0.0; 4]);
        stage_out!(data, 0, a);
        stage_out!(other, 1, b);
        (a, b)
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let pair = world.host().unwrap().group(&[3, 1]).unwrap();
    let (a, b) = demo::load(&world).unwrap().run(&pair).unwrap();
    assert_eq!(a, vec![2.0; 4]); // max over ranks 0 and 2
    assert_eq!(b, vec![1.0; 4]); // rank 1 is group rank 1 of [3, 1]: it keeps its own
}
