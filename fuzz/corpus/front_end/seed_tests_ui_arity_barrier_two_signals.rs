#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let a = signal!();
        let b = signal!();
        barrier!(a, b);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
