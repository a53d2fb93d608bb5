#[pld::program]
mod demo {
    #[pld::host]
    pub fn run(t: &pld::Tensor<f32>) {
        all_reduce!(t);
    }
}

fn main() {
    let world = pld::World::local(2).unwrap();
    let t = pld::Tensor::<f32>::zeros([2, 4]);
    let _ = demo::load(&world).unwrap().run(&t);
}
