#[pld::program]
mod demo {
    #[pld::kernel]
    pub fn k(data: &mut DistributedTensor<f32>) {
        let mut i = 0;
        while i < 4 {
            i += 1;
        }
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
