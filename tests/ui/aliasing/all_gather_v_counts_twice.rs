#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let local = window!(f32, [2, 8]);
        let counts = window!(i32, [4]);
        all_gather_v!(local, counts, counts);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
