#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(f32, [8]);
        all_reduce!(data, mode = ring, nranks = 3, group = [0, 1]);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
