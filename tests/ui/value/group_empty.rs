#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        barrier!(group = []);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
