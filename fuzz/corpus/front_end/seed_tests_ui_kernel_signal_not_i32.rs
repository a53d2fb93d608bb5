#[pld::program]
mod demo {
    #[pld::kernel]
    pub fn k(signal: &DistributedTensor<f32>) {
        notify(signal, 1, 0, 1, AtomicAdd);
    }

    #[pld::host]
    pub fn run() {
        barrier!();
    }
}

fn main() {
    let world = pld::World::local(2).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
