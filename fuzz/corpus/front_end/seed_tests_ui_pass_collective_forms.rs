//! Every accepted form of the other collectives, staging, early return and host parameters.

#[pld::program]
mod demo {
    use pld::Tensor;

    pub const N: usize = 3;
    const ROOT: i64 = 2;

    /// Doc comments stay on the function and its Program method.
    #[pld::host]
    pub fn everything<'a>(inputs: &'a Tensor<i32>, outputs: &mut Tensor<i32>, root: usize) -> usize {
        let local = window!(i32, [4]);
        let gathered = window!(i32, [N, 4]);
        let scattered = window!(i32, [N, 4]);
        let exchanged = window!(i32, [N, 4]);
        let send = window!(i32, [N]);
        let recv = window!(i32, [N]);
        let s = signal!();
        for r in ranks() {
            stage_in!(local, r, inputs.row(r));
            stage_in!(scattered, r, [1; 12]);
            stage_in!(send, r, [1, 0, 1]);
        }
        all_gather!(local, gathered);
        all_gather!(local, gathered, signal = s);
        all_gather!(local, gathered, nranks = 3, signal = s);
        reduce_scatter!(scattered);
        reduce_scatter!(scattered, op = max, signal = s);
        broadcast!(gathered, root = 0);
        broadcast!(gathered, root = root);
        broadcast!(gathered, root = ROOT, signal = s);
        broadcast!(gathered, root = N - 1, nranks = 3);
        all_to_all!(gathered, exchanged);
        all_to_all!(gathered, exchanged, signal = s);
        all_to_all_v!(gathered, exchanged, send, recv);
        all_to_all_v!(gathered, exchanged, send, recv, nranks = N, signal = s);
        barrier!();
        barrier!(s);
        pld::barrier!(s);
        for r in ranks() {
            stage_out!(gathered, r, outputs.row_mut(r));
        }
        if world_size() != N {
            return 0;
        }
        world_size()
    }
}

fn main() {
    let world = pld::World::local(demo::N).unwrap();
    let inputs = pld::Tensor::<i32>::from_fn([3, 4], |[r, i]| (10 * r + i) as i32);
    let mut outputs = pld::Tensor::<i32>::zeros([3, 3 * 4]);
    let program = demo::load(&world).unwrap();
    assert_eq!(program.everything(&inputs, &mut outputs, 1).unwrap(), 3);
    assert_eq!(outputs.row(0), inputs.as_slice());
}
