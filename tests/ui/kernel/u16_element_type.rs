#[pld::program]
mod demo {
    #[pld::kernel]
    pub fn k(data: &mut DistributedTensor<u16>) {
        fill(data, 0.0);
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
