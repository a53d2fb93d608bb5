#[pld::program]
mod demo {
    #[pld::kernel]
    pub fn k(data: &mut DistributedTensor<f32>) {
        let x = 1 + 2.5;
        fill(data, x);
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
