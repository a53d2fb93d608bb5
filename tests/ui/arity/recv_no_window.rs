#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        recv!(from = 0, to = 1);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
