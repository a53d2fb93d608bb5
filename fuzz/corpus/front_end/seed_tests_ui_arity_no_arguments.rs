#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        all_reduce!();
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
