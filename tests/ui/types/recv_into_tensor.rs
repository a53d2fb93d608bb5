#[pld::program]
mod demo {
    #[pld::host]
    pub fn run(t: &mut pld::Tensor<f32>) {
        recv!(t, from = 0, to = 1);
    }
}

fn main() {
    let world = pld::World::local(2).unwrap();
    let mut t = pld::Tensor::<f32>::zeros([2, 4]);
    let _ = demo::load(&world).unwrap().run(&mut t);
}
