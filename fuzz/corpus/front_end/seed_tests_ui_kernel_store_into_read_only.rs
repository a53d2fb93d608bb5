#[pld::program]
mod demo {
    #[pld::kernel]
    pub fn k(data: &DistributedTensor<f32>) {
        let t = load(data, 0, 4);
        store(data, 0, t);
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
