#[pld::program]
mod demo {
    #[pld::kernel]
    pub fn k(signal: &DistributedTensor<i32>) {
        wait(signal, 0, 1, Gt);
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
