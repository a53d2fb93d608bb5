#[pld::program]
mod demo {
    #[pld::kernel]
    pub fn k(data: &mut DistributedTensor<f32>) {
        let n = world_size();
        fill(data, n as f32);
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
