#[pld::program]
mod demo {
    use pld::Tensor;

    #[pld::kernel]
    pub fn publish(input: &Tensor<f32>, data: &mut DistributedTensor<f32>) {
        let t = load(input, 0, len(input));
        store(data, 0, t);
    }

    #[pld::host]
    pub fn run(inputs: &Tensor<f32>) {
        let data = window!(f32, [4]);
        for r in ranks() {
            launch!(pubilsh(inputs.row(r), data), device = r);
        }
    }
}

fn main() {
    let world = pld::World::local(2).unwrap();
    let inputs = pld::Tensor::<f32>::zeros([2, 4]);
    let _ = demo::load(&world).unwrap().run(&inputs);
}
